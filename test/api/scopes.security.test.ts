import Fastify from 'fastify';
import { expect, it } from 'vitest';
import { AREAS, SCOPES, type Scope } from '../../src/core/access.ts';
import { apiKeyPrincipal, cliPrincipal } from '../../src/core/principal.ts';
import { API_ACCESS } from '../../src/http/api-access.ts';
import { requireApiKey } from '../../src/http/auth.ts';
import { registerErrorHandling } from '../../src/http/errors.ts';
import { SqlApiKeyRepository } from '../../src/modules/api-keys/repository.ts';
import { ApiKeyService } from '../../src/modules/api-keys/service.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

/**
 * Every server-API route, every scope: a table-driven test, so a new route cannot forget its
 * scope. The routes come from the app itself; what each scope may do is written here again, from
 * decisions.md ("Operators: teams and security"), independently of src/core/access.ts:
 * - `full`: everything;
 * - `read`: GET only;
 * - `licenses`: licenses, devices and validation only: the routes listed below, nothing else.
 */
const LICENSES_SCOPE = new Set([
  'POST /api/v1/licenses',
  'GET /api/v1/licenses',
  'PATCH /api/v1/licenses',
  'DELETE /api/v1/licenses',
  'POST /api/v1/licenses/send-email',
  'POST /api/v1/licenses/activate',
  'POST /api/v1/licenses/validate',
  'POST /api/v1/licenses/devices/:deviceId/remove',
  'POST /api/v1/licenses/devices/reset',
  'GET /api/v1/products/:productId/licenses',
  'GET /api/v1/licenses/events',
  'DELETE /api/v1/licenses/subscription',
  'POST /api/v1/licenses/rotate-key',
  'GET /api/v1/events',
]);

const allowedFor = (scope: Scope, route: string): boolean => {
  const method = route.split(' ')[0]!;
  if (scope === 'full') return true;
  if (scope === 'read') return method === 'GET';
  return LICENSES_SCOPE.has(route);
};

/** A path to call for a route: its parameters filled with ids that match nothing. */
const concrete = (url: string) => url.replace(/:([A-Za-z]+)/g, (_m, name: string) => `${name}_none`);

forEachStore('API key scopes', (kind) => {
  const ctx = useTestApp(kind);

  it('every server-API route declares its area in src/http/api-access.ts, and nothing else is declared', () => {
    const routes = ctx.app.serverApiRoutes;
    expect(routes.length).toBeGreaterThan(30);
    const missing = routes.filter((route) => !Object.hasOwn(API_ACCESS, route));
    expect(
      missing,
      `Add to API_ACCESS in src/http/api-access.ts, with the area each route touches (one of ${AREAS.join(', ')}):\n${missing.map((r) => `  '${r}': '<area>',`).join('\n')}\n` +
        `and, if a \`licenses\` key may call it, to LICENSES_SCOPE in this test.`,
    ).toEqual([]);
    const stale = Object.keys(API_ACCESS).filter((route) => !routes.includes(route));
    expect(stale, 'Remove from API_ACCESS (no such route):').toEqual([]);
    const notRoutes = [...LICENSES_SCOPE].filter((route) => !routes.includes(route));
    expect(notRoutes, 'Remove from LICENSES_SCOPE in this test (no such route):').toEqual([]);
  });

  it.each(SCOPES)('a `%s` key reaches exactly the routes its scope allows: 403 insufficient_scope on the others', async (scope) => {
    const tenant = await createTenant(ctx);
    const { secret } = await ctx.services.apiKeys.create(cliPrincipal(tenant.accountId), scope, { scope });
    const wrong: string[] = [];
    for (const route of ctx.app.serverApiRoutes) {
      const [method, url] = route.split(' ') as [string, string];
      const res = await call(ctx, {
        method: method as 'GET',
        url: concrete(url),
        headers: { authorization: `Bearer ${secret}`, 'license-key': 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ' },
        ...(method === 'GET' || method === 'DELETE' ? {} : { json: {} }),
      });
      const refused = res.status === 403 && res.body?.error?.code === 'insufficient_scope';
      if (refused === allowedFor(scope, route)) wrong.push(`${route}: ${res.status} ${res.body?.error?.code ?? ''} (expected ${allowedFor(scope, route) ? 'allowed' : '403 insufficient_scope'})`);
    }
    expect(wrong, `scope ${scope}`).toEqual([]);
  });

  it('a refused request changes nothing: a read key cannot create, revoke or delete; a licenses key cannot touch products', async () => {
    const tenant = await createTenant(ctx);
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id);
    const read = `Bearer ${(await ctx.services.apiKeys.create(cliPrincipal(tenant.accountId), 'r', { scope: 'read' })).secret}`;
    const licenses = `Bearer ${(await ctx.services.apiKeys.create(cliPrincipal(tenant.accountId), 'l', { scope: 'licenses' })).secret}`;
    const attempts = [
      { authorization: read, method: 'POST', url: '/api/v1/products', json: { name: 'new' } },
      { authorization: read, method: 'PATCH', url: '/api/v1/licenses', json: { revoked: true } },
      { authorization: read, method: 'DELETE', url: '/api/v1/licenses' },
      { authorization: licenses, method: 'PATCH', url: `/api/v1/products/${product.id}`, json: { name: 'renamed' } },
      { authorization: licenses, method: 'DELETE', url: `/api/v1/products/${product.id}?force=true` },
    ] as const;
    for (const { authorization, ...op } of attempts) {
      const res = await call(ctx, { ...op, headers: { authorization, 'license-key': license.key } });
      expect(res, `${op.method} ${op.url}`).toMatchObject({ status: 403, body: { error: { code: 'insufficient_scope' } } });
      expect(res.body.error.message).toMatch(/scope \((read|licenses)\)/);
    }
    const owner = tenant.auth;
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: owner })).body).toMatchObject([{ id: product.id, name: product.name }]);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...owner, 'license-key': license.key } })).body).toMatchObject({ revoked: false });
    // What a licenses key may do, it does.
    const revoked = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { authorization: licenses, 'license-key': license.key }, json: { revoked: true } });
    expect(revoked).toMatchObject({ status: 200, body: { revoked: true } });
  });

  it('an expired key is refused like a revoked one; a key expiring later works', async () => {
    const tenant = await createTenant(ctx);
    let now = Date.now();
    // The same store, a clock the test moves.
    const clocked = new ApiKeyService(new SqlApiKeyRepository(ctx.store), ctx.services.units, undefined, () => now);
    const { secret } = await clocked.create(cliPrincipal(tenant.accountId), 'soon', { expiresAt: now + 60_000 });
    expect((await clocked.authenticate(`Bearer ${secret}`)).access).toEqual({ type: 'scope', scope: 'full' });
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    now += 60_000;
    await expect(clocked.authenticate(`Bearer ${secret}`)).rejects.toMatchObject({ code: 'invalid_api_key', message: 'This API key has expired.' });
  });

  it('refuses a key with an unknown scope or an expiry in the past, and stores nothing', async () => {
    const tenant = await createTenant(ctx);
    const principal = cliPrincipal(tenant.accountId);
    await expect(ctx.services.apiKeys.create(principal, 'x', { scope: 'admin' })).rejects.toMatchObject({ code: 'invalid_request', issues: [{ path: 'scope' }] });
    await expect(ctx.services.apiKeys.create(principal, 'x', { expiresAt: Date.now() - 1 })).rejects.toMatchObject({ code: 'invalid_request', issues: [{ path: 'expiresAt' }] });
    expect((await ctx.services.apiKeys.list(principal)).map((k) => k.name)).toEqual(['test']);
  });
});

it('a route that declares no area is refused to every key, `full` included', async () => {
  const app = Fastify();
  registerErrorHandling(app);
  app.decorate('serverApiRoutes', [] as string[]);
  const apiKeys = { authenticate: async () => apiKeyPrincipal('acct', 'key_1', 'full') } as never;
  await app.register(async (server) => {
    requireApiKey(server, apiKeys);
    server.post('/api/v1/brand-new', async () => ({ ran: true }));
  });
  const res = await app.inject({ method: 'POST', url: '/api/v1/brand-new', headers: { authorization: 'Bearer x' } });
  expect(res.statusCode).toBe(403);
  expect(res.json()).toMatchObject({ error: { code: 'insufficient_scope' } });
  expect(app.serverApiRoutes).toEqual(['POST /api/v1/brand-new']);
  await app.close();
});

import { expect, it } from 'vitest';
import { call, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('cross-origin calls', (kind) => {
  const ctx = useTestApp(kind);
  const origin = { origin: 'https://app.example.com' };

  it('the public API answers preflights and lets any origin read its answers (apps in browsers and Electron)', async () => {
    const preflight = await call(ctx, {
      method: 'OPTIONS',
      url: '/api/v1/public/licenses/token',
      headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, POST, DELETE',
      'access-control-allow-headers': 'content-type',
    });
    const answer = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', headers: origin, json: { licenseKey: 'K', deviceIdentifier: 'd', productId: 'p' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    const error = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/token', headers: origin, json: {} });
    expect(error.status).toBe(400);
    expect(error.headers['access-control-allow-origin']).toBe('*');
  });

  it('the server API stays closed to browsers: no CORS headers, no preflight', async () => {
    const t = await createTenant(ctx);
    const res = await call(ctx, { method: 'GET', url: '/api/v1/products', headers: { ...origin, ...t.auth } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await call(ctx, { method: 'OPTIONS', url: '/api/v1/products', headers: { ...origin, 'access-control-request-method': 'GET' } });
    expect(preflight.status).toBe(404);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });
});

forEachStore('public preflights: which request headers a page may send', (kind) => {
  const ctx = useTestApp(kind);
  const preflight = (headers: string) =>
    call(ctx, {
      method: 'OPTIONS',
      url: '/api/v1/public/licenses/activate',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
    });

  it("allows what client libraries send: their user agent, content negotiation, X-Requested-With and any x- client header (keyforge's client SDK asks for content-type,user-agent)", async () => {
    const res = await preflight('Content-Type,User-Agent, accept,x-requested-with,X-Client,x-app-version');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-headers']).toBe('content-type, user-agent, accept, x-requested-with, x-client, x-app-version');
    expect(res.headers['access-control-max-age']).toBe('86400');
    expect(res.headers['vary']).toContain('access-control-request-headers');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('never allows credentials, forwarding or method-override headers, nor malformed names', async () => {
    const res = await preflight('authorization, cookie, license-key, proxy-authorization, x-forwarded-for, x-real-ip, x-http-method-override, x-api-key, x-auth-token, x-csrf-token, bad header, x-, x-client');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-headers']).toBe('x-client');
    const none = await preflight('authorization');
    expect(none.headers['access-control-allow-headers']).toBe('content-type');
  });

  it('answers a hostile header list with what fits (bounded work, no error)', async () => {
    const res = await preflight(Array.from({ length: 5000 }, (_, i) => `x-h${i}`).join(','));
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-headers']!.split(', ')).toHaveLength(32);
  });

  it('an unknown public path or method is a 404 JSON error a browser can read (CORS headers on it); the server API stays closed', async () => {
    for (const [method, url] of [['GET', '/api/v1/public/licenses/deactivate'], ['POST', '/api/v1/public/nope'], ['GET', '/api/v1/public/licenses/activate']] as const) {
      const res = await call(ctx, { method, url, headers: { origin: 'https://app.example.com' }, ...(method === 'POST' ? { json: {} } : {}) });
      expect(res.status, url).toBe(404);
      expect(res.body).toEqual({ error: { code: 'not_found', message: 'Not found.' } });
      expect(res.headers['access-control-allow-origin'], url).toBe('*');
    }
    const server = await call(ctx, { method: 'GET', url: '/api/v1/nope', headers: { origin: 'https://app.example.com' } });
    expect(server.status).toBe(404);
    expect(server.headers['access-control-allow-origin']).toBeUndefined();
  });
});

forEachStore('the public API scope', (kind) => {
  const ctx = useTestApp(kind);
  const origin = { origin: 'https://app.example.com' };

  it('puts its CORS headers on every public operation and on no server-API operation', async () => {
    const doc = (await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' })).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ path, method: method.toUpperCase() })));
    expect(operations.filter((o) => o.path.startsWith('/api/v1/public/')).length).toBeGreaterThanOrEqual(6);
    for (const { path, method } of operations) {
      const url = path.replace('{productId}', 'p_unknown').replace('{deviceId}', 'd');
      const res = await call(ctx, { method: method as 'GET', url, headers: origin, ...(method === 'GET' ? {} : { json: {} }) });
      const isPublic = path.startsWith('/api/v1/public/');
      expect(res.headers['access-control-allow-origin'], `${method} ${path}`).toBe(isPublic ? '*' : undefined);
    }
  });

  it('answers preflights on paths with parameters too', async () => {
    for (const url of ['/api/v1/public/products/p_x/image', '/api/v1/public/products/p_x/license-token/public-key', '/api/v1/public/licenses/device']) {
      const res = await call(ctx, { method: 'OPTIONS', url, headers: { ...origin, 'access-control-request-method': 'GET' } });
      expect(res.status, url).toBe(204);
      expect(res.headers['access-control-max-age']).toBe('86400');
    }
  });
});

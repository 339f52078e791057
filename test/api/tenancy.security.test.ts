import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';
import { cliPrincipal } from '../../src/core/principal.ts';

forEachStore('tenant isolation and API keys', (kind) => {
  const ctx = useTestApp(kind);

  it("another account's product is a 404 on every operation, and is left unchanged", async () => {
    const owner = await createTenant(ctx);
    const intruder = await createTenant(ctx);
    const p = await createProduct(ctx, owner);
    const l = await createLicense(ctx, owner, p.id);
    const ops = [
      { method: 'GET', url: `/api/v1/products/${p.id}` },
      { method: 'PATCH', url: `/api/v1/products/${p.id}`, json: { name: 'pwned' } },
      { method: 'DELETE', url: `/api/v1/products/${p.id}?force=true` },
      { method: 'GET', url: `/api/v1/products/${p.id}/licenses` },
      { method: 'POST', url: '/api/v1/licenses', json: { productId: p.id, type: 'perpetual', maxDevices: 1 } },
    ] as const;
    for (const op of ops) {
      const res = await call(ctx, { ...op, headers: intruder.auth });
      expect(res, `${op.method} ${op.url}`).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: 'Product not found.' } } });
    }
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}`, headers: owner.auth })).body.name).toBe(p.name);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...owner.auth, 'license-key': l.key } })).status).toBe(200);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: intruder.auth })).body).toEqual([]);
  });

  it("another account's license is a 404 on every operation, indistinguishable from an unknown key", async () => {
    const owner = await createTenant(ctx);
    const intruder = await createTenant(ctx);
    const p = await createProduct(ctx, owner);
    const l = await createLicense(ctx, owner, p.id);
    const ownerHeaders = { ...owner.auth, 'license-key': l.key };
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: ownerHeaders, json: { productId: p.id, device: { identifier: 'd', name: 'n' } } });
    const ops = [
      { method: 'GET', url: '/api/v1/licenses' },
      { method: 'PATCH', url: '/api/v1/licenses', json: { revoked: true } },
      { method: 'DELETE', url: '/api/v1/licenses' },
      { method: 'POST', url: '/api/v1/licenses/activate', json: { productId: p.id, device: { identifier: 'x', name: 'x' } } },
      { method: 'POST', url: '/api/v1/licenses/validate', json: {} },
      { method: 'POST', url: '/api/v1/licenses/devices/d/remove' },
      { method: 'POST', url: '/api/v1/licenses/devices/reset' },
    ] as const;
    for (const op of ops) {
      const theirs = await call(ctx, { ...op, headers: { ...intruder.auth, 'license-key': l.key } });
      const unknown = await call(ctx, { ...op, headers: { ...intruder.auth, 'license-key': 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ' } });
      expect(theirs, `${op.method} ${op.url}`).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
      expect(theirs.body).toEqual(unknown.body);
    }
    const after = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: ownerHeaders });
    expect(after.body).toMatchObject({ revoked: false, activeDevices: [{ identifier: 'd' }] });
  });

  it.each([
    ['no Authorization header', {}, 401, 'missing_api_key'],
    ['a Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, 401, 'missing_api_key'],
    ['an empty Bearer', { authorization: 'Bearer ' }, 401, 'missing_api_key'],
    ['a malformed key', { authorization: 'Bearer not-a-key' }, 403, 'invalid_api_key'],
    ['an unknown well-formed key', { authorization: `Bearer sk_${'a'.repeat(40)}` }, 403, 'invalid_api_key'],
  ])('refuses %s', async (_label, headers, status, code) => {
    const res = await call(ctx, { method: 'GET', url: '/api/v1/products', headers });
    expect(res).toMatchObject({ status, body: { error: { code } } });
  });

  it('authenticates before parsing the body: no API key, no validation details', async () => {
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', json: { nonsense: true } });
    expect(res).toMatchObject({ status: 401, body: { error: { code: 'missing_api_key' } } });
    expect(res.body.error.issues).toBeUndefined();
  });

  it('a revoked API key stops working at once; the other keys keep working', async () => {
    const t = await createTenant(ctx);
    const second = await ctx.services.apiKeys.create(cliPrincipal(t.accountId), 'ci');
    // Both keys may share a creation millisecond: pick the tenant's own key by name, not by position.
    const original = (await ctx.services.apiKeys.list(cliPrincipal(t.accountId))).find((k) => k.name === 'test');
    await ctx.services.apiKeys.revoke(cliPrincipal(t.accountId), original!.id);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: t.auth })).body.error.code).toBe('invalid_api_key');
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: { authorization: `Bearer ${second.secret}` } })).status).toBe(200);
  });

  it('stores API keys only as SHA-256 hashes', async () => {
    const t = await createTenant(ctx);
    const rows = await ctx.store.read.all(ctx.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', t.accountId));
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(t.apiKey);
    expect(rows[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the public API never exposes the owner, the e-mail or other devices', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { email: 'secret@example.com' });
    const headers = { ...t.auth, 'license-key': l.key };
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json: { productId: p.id, device: { identifier: 'other-device', name: 'n' } } });
    const res = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: 'me', deviceName: 'n', productId: p.id } });
    const text = JSON.stringify(res.body);
    for (const secret of [t.accountId, 'secret@example.com', 'other-device', 'activeDevices', 'userId']) expect(text).not.toContain(secret);
  });
});

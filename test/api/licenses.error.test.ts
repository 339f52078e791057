import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('licenses API errors', (kind) => {
  const ctx = useTestApp(kind);
  const countLicenses = async () =>
    Number((await ctx.store.read.first(ctx.store.db.selectFrom('licenses').select((eb) => eb.fn.countAll<number>().as('n'))))?.n);

  it.each([
    ['missing productId', { productId: undefined, type: 'perpetual', maxDevices: 1 }, 'productId'],
    ['missing type', { maxDevices: 1 }, 'type'],
    ['unknown type', { type: 'forever', maxDevices: 1 }, 'type'],
    ['missing maxDevices', { type: 'perpetual' }, 'maxDevices'],
    ['maxDevices 0', { type: 'perpetual', maxDevices: 0 }, 'maxDevices'],
    ['maxDevices over 100000', { type: 'perpetual', maxDevices: 100001 }, 'maxDevices'],
    ['fractional maxDevices', { type: 'perpetual', maxDevices: 1.5 }, 'maxDevices'],
    ['maxDevices as a string', { type: 'perpetual', maxDevices: '5' }, 'maxDevices'],
    ['timed without expiresAt', { type: 'timed', maxDevices: 1 }, 'expiresAt'],
    ['timed with null expiresAt', { type: 'timed', expiresAt: null, maxDevices: 1 }, 'expiresAt'],
    ['perpetual with expiresAt', { type: 'perpetual', expiresAt: '2030-01-01', maxDevices: 1 }, 'expiresAt'],
    ['expiresAt without a zone', { type: 'timed', expiresAt: '2030-01-01T10:00:00', maxDevices: 1 }, 'expiresAt'],
    ['expiresAt not a date', { type: 'timed', expiresAt: 'next year', maxDevices: 1 }, 'expiresAt'],
    ['invalid e-mail', { type: 'perpetual', maxDevices: 1, email: 'nope' }, 'email'],
  ])('create rejects %s with invalid_request and stores nothing', async (_label, body, path) => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const before = await countLicenses();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json: { productId: p.id, ...body } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await countLicenses()).toBe(before);
  });

  it('create for an unknown product is a 404 and stores nothing', async () => {
    const t = await createTenant(ctx);
    const before = await countLicenses();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json: { productId: 'p_nope', type: 'perpetual', maxDevices: 1 } });
    expect(res).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(await countLicenses()).toBe(before);
  });

  it.each([
    ['timed with null expiresAt', { type: 'timed', expiresAt: null }],
    ['perpetual → timed without a date', { type: 'timed' }],
    ['expiresAt on a perpetual license', { expiresAt: '2030-01-01' }],
    ['maxDevices 0', { maxDevices: 0 }],
    ['revoked as a string', { revoked: 'true' }],
  ])('update rejects %s and leaves the license unchanged', async (_label, body) => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const headers = { ...t.auth, 'license-key': l.key };
    const res = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: body });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers })).body).toEqual(l);
  });

  it('requires the License-Key header on license operations', async () => {
    const t = await createTenant(ctx);
    const res = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: t.auth });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe('headers.license-key');
  });

  it('answers unknown keys with 404 on every license operation', async () => {
    const t = await createTenant(ctx);
    const headers = { ...t.auth, 'license-key': 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE' };
    const ops = [
      { method: 'GET', url: '/api/v1/licenses' },
      { method: 'PATCH', url: '/api/v1/licenses', json: { revoked: true } },
      { method: 'DELETE', url: '/api/v1/licenses' },
      { method: 'POST', url: '/api/v1/licenses/activate', json: { productId: 'p_x', device: { identifier: 'a', name: 'b' } } },
      { method: 'POST', url: '/api/v1/licenses/validate', json: {} },
      { method: 'POST', url: '/api/v1/licenses/devices/a/remove' },
      { method: 'POST', url: '/api/v1/licenses/devices/reset' },
    ] as const;
    for (const op of ops) {
      const res = await call(ctx, { ...op, headers });
      expect(res, `${op.method} ${op.url}`).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    }
  });

  it('list rejects a bad limit or cursor, and an unknown product', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=garbage']) {
      const res = await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}/licenses?${q}`, headers: t.auth });
      expect(res, q).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    }
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products/p_nope/licenses', headers: t.auth })).status).toBe(404);
  });
});

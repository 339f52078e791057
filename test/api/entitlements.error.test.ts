import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));

forEachStore('entitlements and metadata errors', (kind) => {
  const ctx = useTestApp(kind);
  const countLicenses = async () => Number((await ctx.store.read.first(ctx.store.db.selectFrom('licenses').select((eb) => eb.fn.countAll<number>().as('n'))))?.n);

  it.each([
    ['an upper-case code', { entitlements: ['Pro'] }, 'entitlements/0'],
    ['a code with a space', { entitlements: ['pro plan'] }, 'entitlements/0'],
    ['a code starting with a dot', { entitlements: ['.pro'] }, 'entitlements/0'],
    ['a code of 65 characters', { entitlements: ['a'.repeat(65)] }, 'entitlements/0'],
    ['101 codes', { entitlements: Array.from({ length: 101 }, (_, i) => `f${i}`) }, 'entitlements'],
    ['entitlements not an array', { entitlements: 'pro' }, 'entitlements'],
    ['a metadata value over 500', { metadata: { a: 'x'.repeat(501) } }, 'metadata'],
    ['a metadata key over 40', { metadata: { ['k'.repeat(41)]: 'x' } }, 'metadata'],
    ['51 metadata keys', { metadata: { ...fifty, one: 'more' } }, 'metadata'],
    ['a metadata value that is a number', { metadata: { a: 1 } }, 'metadata'],
    ['metadata an array', { metadata: ['a'] }, 'metadata'],
  ])('create rejects %s with a 400 and stores nothing', async (_label, body, path) => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const before = await countLicenses();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json: { productId: p.id, type: 'perpetual', maxDevices: 1, ...body } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.issues.map((i: { path: string }) => i.path).join(' ')).toContain(path.split('/')[0]);
    expect(await countLicenses()).toBe(before);
  });

  it('a PATCH that would take metadata past 50 keys is a 400 and changes nothing', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { metadata: fifty, entitlements: ['pro'] });
    const headers = { ...t.auth, 'license-key': l.key };
    const res = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { metadata: { extra: 'x' }, entitlements: [] } });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', issues: [{ path: 'metadata' }] } } });
    const after = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers });
    expect(after.body.metadata).toEqual(fifty);
    expect(after.body.entitlements).toEqual(['pro']);
    // Replacing a key and removing another keeps the count at 50: accepted.
    const swap = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { metadata: { k0: null, extra: 'x' } } });
    expect(swap.status).toBe(200);
  });

  it.each([
    ['a bad default entitlement', { defaultEntitlements: ['Pro'] }],
    ['floating lease under 60 s', { floating: { enabled: true, leaseSeconds: 59 } }],
    ['floating lease over a day', { floating: { leaseSeconds: 86401 } }],
  ])('product PATCH rejects %s and changes nothing', async (_label, body) => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const res = await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: body });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    const after = await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}`, headers: t.auth });
    expect(after.body).toEqual(p);
  });
});

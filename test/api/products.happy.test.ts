import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('products API', (kind) => {
  const ctx = useTestApp(kind);

  it('creates a product with every default of decisions.md', async () => {
    const t = await createTenant(ctx);
    const res = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: t.auth, json: { name: 'Editor' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^p_/),
      userId: t.accountId,
      name: 'Editor',
      description: '',
      supportEmail: null,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      portalShow: true,
      portalAllowDeviceReset: true,
      hasImage: false,
      fallbackEnabled: false,
      purchaseNote: null,
      actionButtonText: null,
      actionButtonUrl: null,
      portalDeviceResetLimit: 3,
      portalDeviceResetWindowDays: 30,
      defaultEntitlements: [],
      floating: { enabled: false, leaseSeconds: 900 },
      trial: { enabled: false, days: 14, maxDevices: 1 },
    });
  });

  it('accepts every writable field on create and update', async () => {
    const t = await createTenant(ctx);
    const fields = {
      name: 'Pro',
      description: 'The pro tier',
      supportEmail: 'help@vendor.test',
      portalShow: false,
      portalAllowDeviceReset: false,
      fallbackEnabled: true,
      purchaseNote: 'Thanks!',
      actionButtonText: 'Download',
      actionButtonUrl: 'https://vendor.test/dl?key={key}',
    };
    const created = await createProduct(ctx, t, fields);
    expect(created).toMatchObject(fields);
    const patch = { description: 'Changed', supportEmail: null, portalShow: true, actionButtonUrl: null, actionButtonText: null };
    const updated = await call(ctx, { method: 'PATCH', url: `/api/v1/products/${created.id}`, headers: t.auth, json: patch });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ ...fields, ...patch });
    const fetched = await call(ctx, { method: 'GET', url: `/api/v1/products/${created.id}`, headers: t.auth });
    expect(fetched.body).toEqual(updated.body);
  });

  it('an empty PATCH changes nothing and returns the product', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const res = await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: {} });
    expect(res).toMatchObject({ status: 200, body: p });
  });

  it('lists the account products as a plain array, oldest first', async () => {
    const t = await createTenant(ctx);
    const a = await createProduct(ctx, t, { name: 'A' });
    const b = await createProduct(ctx, t, { name: 'B' });
    const res = await call(ctx, { method: 'GET', url: '/api/v1/products', headers: { ...t.auth, 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    const listed = res.body as { id: string; createdAt: string }[];
    expect(listed.map((p) => p.id).sort()).toEqual([a.id, b.id].sort());
    // Oldest first (products created in the same millisecond follow their ids, in the store's collation).
    const times = listed.map((p) => p.createdAt);
    expect(times).toEqual([...times].sort());
  });

  it('deletes a product without licenses with an empty 200', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const res = await call(ctx, { method: 'DELETE', url: `/api/v1/products/${p.id}`, headers: { ...t.auth, 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.raw.body).toBe('');
    expect(res.headers['content-length']).toBe('0');
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}`, headers: t.auth })).status).toBe(404);
  });

  it('refuses to delete a product with licenses unless forced, then deletes licenses and devices too', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...t.auth, 'license-key': l.key }, json: { productId: p.id, device: { identifier: 'd1', name: 'PC' } } });
    const refused = await call(ctx, { method: 'DELETE', url: `/api/v1/products/${p.id}`, headers: t.auth });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'product_has_licenses' } } });
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } })).status).toBe(200);

    const forced = await call(ctx, { method: 'DELETE', url: `/api/v1/products/${p.id}?force=true`, headers: t.auth });
    expect(forced.status).toBe(200);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } })).status).toBe(404);
    const devices = await ctx.store.read.all(ctx.store.db.selectFrom('devices').selectAll().where('license_key', '=', l.key));
    expect(devices).toEqual([]);
  });
});

import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('heartbeat errors', (kind) => {
  const ctx = useTestApp(kind);
  const heartbeat = (json: unknown) => call(ctx, { method: 'POST', url: '/api/v1/public/licenses/heartbeat', json });
  const leases = async () => ctx.store.read.all(ctx.store.db.selectFrom('devices').select(['identifier', 'lease_expires_at']));

  it.each([
    ['no licenseKey', { deviceIdentifier: 'd', productId: 'p_x' }, 'licenseKey'],
    ['no deviceIdentifier', { licenseKey: 'K', productId: 'p_x' }, 'deviceIdentifier'],
    ['no productId', { licenseKey: 'K', deviceIdentifier: 'd' }, 'productId'],
    ['a blank deviceIdentifier', { licenseKey: 'K', deviceIdentifier: '   ', productId: 'p_x' }, 'deviceIdentifier'],
    ['a number as the key', { licenseKey: 5, deviceIdentifier: 'd', productId: 'p_x' }, 'licenseKey'],
  ])('rejects %s with a 400 and writes nothing', async (_label, json, path) => {
    const before = await leases();
    const res = await heartbeat(json);
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await leases()).toEqual(before);
  });

  it('an unknown key, another product and a device never activated are invalid answers, not errors, and renew nothing', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { floating: { enabled: true } });
    const other = await createProduct(ctx, t, { floating: { enabled: true } });
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'vm', deviceName: 'vm' } });
    const before = await leases();
    expect((await heartbeat({ licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', deviceIdentifier: 'vm', productId: p.id })).body).toMatchObject({ isValid: false, reason: 'not_found' });
    expect((await heartbeat({ licenseKey: l.key, deviceIdentifier: 'vm', productId: other.id })).body).toMatchObject({ isValid: false, reason: 'product_mismatch' });
    expect((await heartbeat({ licenseKey: l.key, deviceIdentifier: 'ghost', productId: p.id })).body).toMatchObject({ isValid: false, reason: 'device_not_activated' });
    expect(await leases()).toEqual(before);
  });

  it('a revoked license is refused a heartbeat and its lease is not renewed', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { floating: { enabled: true } });
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'vm', deviceName: 'vm' } });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key }, json: { revoked: true } });
    const before = await leases();
    expect((await heartbeat({ licenseKey: l.key, deviceIdentifier: 'vm', productId: p.id })).body).toMatchObject({ isValid: false, reason: 'revoked' });
    expect(await leases()).toEqual(before);
  });
});

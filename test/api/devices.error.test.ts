import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('activation and device errors', (kind) => {
  const ctx = useTestApp(kind);

  async function setup(licenseFields = {}) {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, licenseFields);
    return { t, p, l, headers: { ...t.auth, 'license-key': l.key } };
  }
  const activate = (json: Record<string, unknown>) => call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json });
  const devicesOf = async (key: string) => ctx.store.read.all(ctx.store.db.selectFrom('devices').selectAll().where('license_key', '=', key));

  it('activating a revoked license fails with license_revoked and the spec message', async () => {
    const { p, l, headers } = await setup();
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: true } });
    const pub = await activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'n', productId: p.id });
    expect(pub).toMatchObject({ status: 400, body: { error: { code: 'license_revoked', message: 'License is revoked.' } } });
    const server = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json: { productId: p.id, device: { identifier: 'd', name: 'n' } } });
    expect(server).toMatchObject({ status: 400, body: { error: { code: 'license_revoked', message: 'License is revoked.' } } });
    expect(await devicesOf(l.key)).toEqual([]);
  });

  it('activating an expired license fails with license_expired', async () => {
    const { p, l } = await setup({ type: 'timed', expiresAt: '2021-06-01' });
    const res = await activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'n', productId: p.id });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'license_expired' } } });
    expect(await devicesOf(l.key)).toEqual([]);
  });

  it('a full license refuses a new device with max_devices_reached', async () => {
    const { p, l } = await setup({ maxDevices: 1 });
    expect((await activate({ licenseKey: l.key, deviceIdentifier: 'a', deviceName: 'n', productId: p.id })).status).toBe(200);
    const res = await activate({ licenseKey: l.key, deviceIdentifier: 'b', deviceName: 'n', productId: p.id });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'max_devices_reached' } } });
    expect(await devicesOf(l.key)).toHaveLength(1);
  });

  it('unknown key or product mismatch is invalid_license on the public API', async () => {
    const { l } = await setup();
    const unknown = await activate({ licenseKey: 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ', deviceIdentifier: 'd', deviceName: 'n', productId: 'p_x' });
    expect(unknown).toMatchObject({ status: 400, body: { error: { code: 'invalid_license' } } });
    const mismatch = await activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'n', productId: ['p_a', 'p_b'] });
    expect(mismatch).toMatchObject({ status: 400, body: { error: { code: 'invalid_license' } } });
    expect(await devicesOf(l.key)).toEqual([]);
  });

  it('server activation with another product is invalid_license', async () => {
    const { headers, l } = await setup();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json: { productId: 'p_other', device: { identifier: 'd', name: 'n' } } });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_license' } } });
    expect(await devicesOf(l.key)).toEqual([]);
  });

  it.each([
    ['identifier of 97 characters', { deviceIdentifier: 'x'.repeat(97) }, 'deviceIdentifier'],
    ['name of 65 characters', { deviceName: 'x'.repeat(65) }, 'deviceName'],
    ['name of 65 characters within spaces', { deviceName: ` ${'x'.repeat(65)} ` }, 'deviceName'],
    ['identifier of 97 characters within spaces', { deviceIdentifier: `\t${'x'.repeat(97)}\n` }, 'deviceIdentifier'],
    ['identifier longer than any trimming allows', { deviceIdentifier: 'x'.repeat(257) }, 'deviceIdentifier'],
    ['blank identifier', { deviceIdentifier: '   ' }, 'deviceIdentifier'],
    ['blank name', { deviceName: ' ' }, 'deviceName'],
    ['empty identifier', { deviceIdentifier: '' }, 'deviceIdentifier'],
    ['missing name', { deviceName: undefined }, 'deviceName'],
    ['missing licenseKey', { licenseKey: undefined }, 'licenseKey'],
    ['missing productId', { productId: undefined }, 'productId'],
    ['empty productId array', { productId: [] }, 'productId'],
    ['productId as a number', { productId: 7 }, 'productId'],
    ['identifier as a number', { deviceIdentifier: 12345 }, 'deviceIdentifier'],
  ])('public activation rejects %s with invalid_request and stores nothing', async (_label, override, path) => {
    const { p, l } = await setup();
    const res = await activate({ licenseKey: l.key, deviceIdentifier: 'dev', deviceName: 'name', productId: p.id, ...override });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await devicesOf(l.key)).toEqual([]);
  });

  it('accepts the boundary lengths: 96-character identifier, 64-character name', async () => {
    const { p, l } = await setup();
    const res = await activate({ licenseKey: l.key, deviceIdentifier: 'i'.repeat(96), deviceName: 'n'.repeat(64), productId: p.id });
    expect(res.status).toBe(200);
  });

  it('server activation rejects a missing or malformed device', async () => {
    const { p, headers, l } = await setup();
    for (const json of [{ productId: p.id }, { productId: p.id, device: { identifier: 'a' } }, { productId: p.id, device: 'a' }, { device: { identifier: 'a', name: 'b' } }]) {
      const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json });
      expect(res, JSON.stringify(json)).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    }
    expect(await devicesOf(l.key)).toEqual([]);
  });

  it('public validation rejects malformed requests with 400, not a verdict', async () => {
    for (const json of [{}, { licenseKey: 'K', productId: 'p' }, { licenseKey: 'K', deviceIdentifier: 'd' }, { licenseKey: 1, deviceIdentifier: 'd', productId: 'p' }]) {
      const res = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json });
      expect(res, JSON.stringify(json)).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    }
  });

  it('public device removal: unknown license or wrong product is invalid_license; bad body is 400', async () => {
    const { p, l } = await setup();
    await activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'n', productId: p.id });
    const url = '/api/v1/public/licenses/device';
    expect((await call(ctx, { method: 'DELETE', url, json: { licenseKey: 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ', deviceIdentifier: 'd', productId: p.id } })).body.error.code).toBe('invalid_license');
    expect((await call(ctx, { method: 'DELETE', url, json: { licenseKey: l.key, deviceIdentifier: 'd', productId: 'p_other' } })).body.error.code).toBe('invalid_license');
    expect((await call(ctx, { method: 'DELETE', url, json: { licenseKey: l.key } })).status).toBe(400);
    expect(await devicesOf(l.key)).toHaveLength(1);
  });
});

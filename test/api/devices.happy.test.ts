import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('activation, validation and devices', (kind) => {
  const ctx = useTestApp(kind);

  async function setup(productFields = {}, licenseFields = {}) {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, productFields);
    const l = await createLicense(ctx, t, p.id, licenseFields);
    return { t, p, l, headers: { ...t.auth, 'license-key': l.key } };
  }
  const publicActivate = (licenseKey: string, productId: unknown, deviceIdentifier = 'dev-1', deviceName = 'Laptop') =>
    call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey, deviceIdentifier, deviceName, productId } });
  const publicValidate = (licenseKey: string, productId: unknown, deviceIdentifier = 'dev-1') =>
    call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey, deviceIdentifier, productId } });
  const serverActivate = (headers: Record<string, string>, productId: string, identifier: string, name = 'PC') =>
    call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json: { productId, device: { identifier, name } } });

  it('server activation adds the device and returns the license', async () => {
    const { p, headers } = await setup();
    const res = await serverActivate(headers, p.id, 'mac-00:11', 'Office PC');
    expect(res.status).toBe(200);
    expect(res.body.activeDevices).toEqual([{ identifier: 'mac-00:11', name: 'Office PC', activationDate: expect.stringMatching(/Z$/), lastSeenAt: expect.stringMatching(/Z$/), leaseExpiresAt: null }]);
  });

  it('re-activating an active device takes no new slot, keeps its date and updates its name', async () => {
    const { p, headers } = await setup({}, { maxDevices: 1 });
    const first = await serverActivate(headers, p.id, 'd1', 'Old name');
    const again = await serverActivate(headers, p.id, 'd1', 'New name');
    expect(again.status).toBe(200);
    expect(again.body.activeDevices).toEqual([{ identifier: 'd1', name: 'New name', activationDate: first.body.activeDevices[0].activationDate, lastSeenAt: first.body.activeDevices[0].lastSeenAt, leaseExpiresAt: null }]);
  });

  it('public activation returns the public result without private fields', async () => {
    const { p, l } = await setup();
    const res = await publicActivate(l.key.toLowerCase(), p.id, 'dev-1', 'Laptop');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      isValid: true,
      status: 'active',
      device: { identifier: 'dev-1', name: 'Laptop', activationDate: expect.any(String) },
      license: { key: l.key, productId: p.id, type: 'perpetual', revoked: false, maxDevices: 3, expiresAt: null, createdAt: l.createdAt, entitlements: [], trial: false },
    });
    expect(res.body).not.toHaveProperty('token'); // tokens are off for this product
  });

  it('bounds the device fields after trimming: the longest identifier and name pass with whitespace around them', async () => {
    const { p, l, headers } = await setup();
    const identifier = 'i'.repeat(96);
    const name = 'n'.repeat(64);
    const res = await publicActivate(l.key, p.id, `  ${identifier}\n`, `\t${name} `);
    expect(res.status).toBe(200);
    expect(res.body.device).toMatchObject({ identifier, name });
    expect((await publicValidate(l.key, p.id, ` ${identifier} `)).body.isValid).toBe(true);
    const server = await serverActivate(headers, p.id, ` ${'j'.repeat(96)} `, ` ${name} `);
    expect(server.status).toBe(200);
    expect(server.body.activeDevices.map((d: { identifier: string }) => d.identifier)).toContain('j'.repeat(96));
  });

  it('accepts productId as an array (tiers)', async () => {
    const { p, l } = await setup();
    expect((await publicActivate(l.key, ['p_other_tier', p.id])).status).toBe(200);
    expect((await publicValidate(l.key, ['p_other_tier', p.id])).body.isValid).toBe(true);
  });

  it('public validation of an activated device is valid; of another device it is not', async () => {
    const { p, l } = await setup();
    await publicActivate(l.key, p.id, 'dev-1');
    const ok = await publicValidate(l.key, p.id, 'dev-1');
    expect(ok.body).toMatchObject({ isValid: true, status: 'active', device: { identifier: 'dev-1' }, license: { key: l.key } });
    expect(ok.body).not.toHaveProperty('reason');
    const other = await publicValidate(l.key, p.id, 'dev-2');
    expect(other).toMatchObject({ status: 200, body: { isValid: false, status: null, device: null, license: null, reason: 'device_not_activated' } });
  });

  it.each([
    ['not_found', async () => ({ key: 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ', productId: 'p_x' })],
    ['product_mismatch', async (s: Awaited<ReturnType<typeof setup>>) => ({ key: s.l.key, productId: 'p_other' })],
  ])('public validation reports %s', async (reason, make) => {
    const s = await setup();
    await publicActivate(s.l.key, s.p.id);
    const { key, productId } = await make(s);
    expect((await publicValidate(key, productId)).body).toEqual({ isValid: false, status: null, device: null, license: null, reason });
  });

  it('public and server validation report revoked and expired; fallback keeps an expired license valid', async () => {
    const revoked = await setup();
    await publicActivate(revoked.l.key, revoked.p.id);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: revoked.headers, json: { revoked: true } });
    expect((await publicValidate(revoked.l.key, revoked.p.id)).body.reason).toBe('revoked');
    const revokedServer = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers: revoked.headers, json: { deviceIdentifier: 'dev-1' } });
    expect(revokedServer.body).toMatchObject({ isValid: false, status: 'revoked', device: { identifier: 'dev-1' } });

    const expired = await setup({}, { type: 'timed', expiresAt: '2030-01-01' });
    await publicActivate(expired.l.key, expired.p.id);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: expired.headers, json: { expiresAt: '2020-01-01' } });
    expect((await publicValidate(expired.l.key, expired.p.id)).body.reason).toBe('expired');
    const serverValidate = () => call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers: expired.headers, json: { deviceIdentifier: 'dev-1' } });
    expect((await serverValidate()).body).toMatchObject({ isValid: false, status: 'expired' });

    await call(ctx, { method: 'PATCH', url: `/api/v1/products/${expired.p.id}`, headers: expired.t.auth, json: { fallbackEnabled: true } });
    expect((await publicValidate(expired.l.key, expired.p.id)).body).toMatchObject({ isValid: true, status: 'fallbacked' });
    expect((await serverValidate()).body).toMatchObject({ isValid: true, status: 'fallbacked', device: { identifier: 'dev-1' } });
    // A fallbacked license can still be activated on a new device.
    expect((await publicActivate(expired.l.key, expired.p.id, 'dev-2')).body).toMatchObject({ isValid: true, status: 'fallbacked' });
  });

  it('server validation always reports the status and the full license', async () => {
    const { p, l, headers } = await setup();
    await serverActivate(headers, p.id, 'd1', 'PC');
    const plain = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers: { ...headers, 'content-type': 'application/json' } });
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({ isValid: true, status: 'active', device: null, license: { key: l.key, userId: l.userId, email: null } });
    expect(plain.body.license.activeDevices).toHaveLength(1);

    const withDevice = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers, json: { deviceIdentifier: 'd1', productId: p.id } });
    expect(withDevice.body).toMatchObject({ isValid: true, device: { identifier: 'd1', name: 'PC' } });
    const unknownDevice = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers, json: { deviceIdentifier: 'd9' } });
    expect(unknownDevice.body).toMatchObject({ isValid: false, status: 'active', device: null });
    const wrongProduct = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers, json: { productId: 'p_other' } });
    expect(wrongProduct.body).toMatchObject({ isValid: false, status: 'active' });

    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: true } });
    const revoked = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers, json: {} });
    expect(revoked.body).toMatchObject({ isValid: false, status: 'revoked', license: { revoked: true } });
  });

  it('removes one device (server and public), idempotently', async () => {
    const { p, l, headers } = await setup();
    await serverActivate(headers, p.id, 'd1');
    await serverActivate(headers, p.id, 'd/2 with spaces');
    const removed = await call(ctx, { method: 'POST', url: `/api/v1/licenses/devices/${encodeURIComponent('d/2 with spaces')}/remove`, headers, json: {} });
    expect(removed.status).toBe(200);
    expect(removed.body.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(['d1']);
    const again = await call(ctx, { method: 'POST', url: `/api/v1/licenses/devices/${encodeURIComponent('d/2 with spaces')}/remove`, headers });
    expect(again.body.activeDevices).toHaveLength(1);

    const pub = await call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: { licenseKey: l.key, deviceIdentifier: 'd1', productId: p.id } });
    expect(pub.status).toBe(200);
    expect(pub.raw.body).toBe('');
    expect((await publicValidate(l.key, p.id, 'd1')).body.reason).toBe('device_not_activated');
  });

  it('resets every device and frees the slots', async () => {
    const { p, headers } = await setup({}, { maxDevices: 2 });
    await serverActivate(headers, p.id, 'd1');
    await serverActivate(headers, p.id, 'd2');
    expect((await serverActivate(headers, p.id, 'd3')).body.error.code).toBe('max_devices_reached');
    const reset = await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers, payload: '', });
    expect(reset).toMatchObject({ status: 200, body: { activeDevices: [] } });
    expect((await serverActivate(headers, p.id, 'd3')).status).toBe(200);
  });

  it('lowering maxDevices keeps the devices but blocks new ones until there is room', async () => {
    const { p, headers } = await setup({}, { maxDevices: 3 });
    for (const id of ['a', 'b', 'c']) await serverActivate(headers, p.id, id);
    const lowered = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { maxDevices: 1 } });
    expect(lowered.body.activeDevices).toHaveLength(3);
    expect((await serverActivate(headers, p.id, 'd')).body.error.code).toBe('max_devices_reached');
    expect((await serverActivate(headers, p.id, 'a', 'renamed')).status).toBe(200); // an active device still re-activates
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/b/remove', headers });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/c/remove', headers });
    expect((await serverActivate(headers, p.id, 'd')).body.error.code).toBe('max_devices_reached');
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/a/remove', headers });
    expect((await serverActivate(headers, p.id, 'd')).status).toBe(200);
  });
});


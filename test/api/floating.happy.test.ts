import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, getPublicKey, manualClock, refreshToken, verifyWithJwk } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

const MINUTE = 60_000;

forEachStore('floating licenses', (kind) => {
  const clock = manualClock(Date.parse('2027-03-01T10:00:00.000Z'));
  const ctx = useTestApp(kind, { clock: clock.now });
  const body = (licenseKey: string, productId: string, deviceIdentifier: string) => ({ licenseKey, productId, deviceIdentifier });
  const activate = (key: string, productId: string, id: string) =>
    call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { ...body(key, productId, id), deviceName: id } });
  const validate = (key: string, productId: string, id: string) => call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: body(key, productId, id) });
  const heartbeat = (key: string, productId: string, id: string) => call(ctx, { method: 'POST', url: '/api/v1/public/licenses/heartbeat', json: body(key, productId, id) });

  async function floating(maxDevices = 2, leaseSeconds = 900) {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { floating: { enabled: true, leaseSeconds } });
    const l = await createLicense(ctx, t, p.id, { maxDevices });
    return { t, p, l };
  }

  it('an activation holds its slot as a lease; a heartbeat renews it', async () => {
    const { t, p, l } = await floating(1);
    const first = await activate(l.key, p.id, 'vm-a');
    expect(first.body.device.leaseExpiresAt).toBe(new Date(clock.now() + 15 * MINUTE).toISOString());
    expect((await activate(l.key, p.id, 'vm-b')).body.error.code).toBe('max_devices_reached');
    clock.advance(10 * MINUTE);
    const beat = await heartbeat(l.key, p.id, 'vm-a');
    expect(beat.body).toMatchObject({ isValid: true, status: 'active', device: { identifier: 'vm-a', leaseExpiresAt: new Date(clock.now() + 15 * MINUTE).toISOString() } });
    clock.advance(10 * MINUTE); // 20 minutes after activation: the first lease would have lapsed, the renewed one holds
    expect((await validate(l.key, p.id, 'vm-a')).body.isValid).toBe(true);
    expect((await activate(l.key, p.id, 'vm-b')).body.error.code).toBe('max_devices_reached');
    const server = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } });
    expect(server.body.activeDevices[0]).toMatchObject({ identifier: 'vm-a', leaseExpiresAt: beat.body.device.leaseExpiresAt, lastSeenAt: new Date(clock.now() - 10 * MINUTE).toISOString() });
  });

  it('a lapsed lease is device_not_activated for validate, heartbeat and token, and frees its slot for the next activation at once', async () => {
    const { t, p, l } = await floating(1);
    await configureTokens(ctx, t, p.id);
    await activate(l.key, p.id, 'vm-a');
    clock.advance(15 * MINUTE); // exactly the lease end: lapsed
    expect((await validate(l.key, p.id, 'vm-a')).body).toEqual({ isValid: false, status: null, device: null, license: null, reason: 'device_not_activated' });
    expect((await heartbeat(l.key, p.id, 'vm-a')).body).toMatchObject({ isValid: false, reason: 'device_not_activated' });
    expect((await refreshToken(ctx, l.key, p.id, 'vm-a')).body.error.code).toBe('invalid_license');
    // No sweep ran: the next activation finds the slot free and releases the lapsed device.
    const next = await activate(l.key, p.id, 'vm-b');
    expect(next.status).toBe(200);
    const server = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } });
    expect(server.body.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(['vm-b']);
    const events = await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...t.auth, 'license-key': l.key } });
    const released = events.body.data.find((e: { type: string }) => e.type === 'device.released');
    expect(released).toMatchObject({ actor: { type: 'lease' }, changes: { device: { identifier: 'vm-a' } } });
  });

  it('a device whose lease lapsed activates again as a new activation', async () => {
    const { p, l } = await floating(1);
    const before = await activate(l.key, p.id, 'vm-a');
    clock.advance(16 * MINUTE);
    const again = await activate(l.key, p.id, 'vm-a');
    expect(again.status).toBe(200);
    expect(again.body.device.activationDate).not.toBe(before.body.device.activationDate);
    expect((await validate(l.key, p.id, 'vm-a')).body.isValid).toBe(true);
  });

  it("a token's exp is at most the lease end", async () => {
    const { t, p, l } = await floating(1, 300);
    await configureTokens(ctx, t, p.id, { enabled: true, validitySeconds: 3600 });
    const jwk = (await getPublicKey(ctx, p.id)).body.jwk;
    const activated = await activate(l.key, p.id, 'vm-a');
    const claims = (await verifyWithJwk(activated.body.token, jwk)).payload;
    expect(claims.exp).toBe(Math.floor(Date.parse(activated.body.device.leaseExpiresAt) / 1000));
    expect(claims.exp! - claims.iat!).toBe(300);
    clock.advance(MINUTE);
    const refreshed = (await verifyWithJwk((await refreshToken(ctx, l.key, p.id, 'vm-a')).body.token, jwk)).payload;
    expect(refreshed.exp).toBe(claims.exp);
  });

  it('when every lease has lapsed, 50 concurrent activations take exactly the 3 freed seats', async () => {
    const { t, p, l } = await floating(3);
    for (const id of ['old-1', 'old-2', 'old-3']) await activate(l.key, p.id, id);
    clock.advance(20 * MINUTE);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => activate(l.key, p.id, `new-${i}`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    const server = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } });
    expect(server.body.activeDevices.every((d: { identifier: string }) => d.identifier.startsWith('new-'))).toBe(true);
    const events = await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...t.auth, 'license-key': l.key } });
    expect(events.body.data.filter((e: { type: string }) => e.type === 'device.released')).toHaveLength(3);
  });

  it('deactivating through the public API frees the slot at once', async () => {
    const { p, l } = await floating(1);
    await activate(l.key, p.id, 'vm-a');
    const removed = await call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: body(l.key, p.id, 'vm-a') });
    expect(removed.status).toBe(200);
    expect((await activate(l.key, p.id, 'vm-b')).status).toBe(200);
  });

  it('a heartbeat on a node-locked product is a validation and writes no lease', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { maxDevices: 1 });
    await activate(l.key, p.id, 'pc');
    clock.advance(365 * 24 * 60 * MINUTE);
    const beat = await heartbeat(l.key, p.id, 'pc');
    expect(beat.body).toMatchObject({ isValid: true, device: { identifier: 'pc' } });
    expect(beat.body.device.leaseExpiresAt).toBeUndefined();
    expect((await heartbeat(l.key, p.id, 'other')).body).toMatchObject({ isValid: false, reason: 'device_not_activated' });
  });

  it('devices activated before the product turned floating hold no lease and keep their slots', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { maxDevices: 1 });
    await activate(l.key, p.id, 'pc');
    await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { floating: { enabled: true } } });
    clock.advance(60 * MINUTE);
    // A node-locked activation has no lease: it keeps its slot after the product turns floating.
    expect((await validate(l.key, p.id, 'pc')).body.isValid).toBe(true);
    expect((await activate(l.key, p.id, 'vm')).body.error.code).toBe('max_devices_reached');
  });
});

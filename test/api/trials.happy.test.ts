import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, getPublicKey, manualClock, verifyWithJwk } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

forEachStore('trials', (kind) => {
  const clock = manualClock(Date.parse('2027-06-01T12:00:00.000Z'));
  const ctx = useTestApp(kind, { clock: clock.now });
  const start = (json: Record<string, unknown>) => call(ctx, { method: 'POST', url: '/api/v1/public/trials', json: { deviceName: 'Laptop', ...json } });

  it('starts a timed trial license on the device in one step, with the product defaults and a verifiable token', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { trial: { enabled: true, days: 7, maxDevices: 2 }, defaultEntitlements: ['pro'] });
    await configureTokens(ctx, t, p.id);
    const res = await start({ productId: p.id, deviceIdentifier: 'mac-1', email: 'trier@example.com' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      isValid: true,
      status: 'active',
      device: { identifier: 'mac-1', name: 'Laptop' },
      license: { productId: p.id, type: 'timed', trial: true, maxDevices: 2, entitlements: ['pro'], expiresAt: new Date(clock.now() + 7 * DAY).toISOString() },
    });
    const jwk = (await getPublicKey(ctx, p.id)).body.jwk;
    expect((await verifyWithJwk(res.body.token, jwk)).payload).toMatchObject({ license: { key: res.body.license.key }, device: { identifier: 'mac-1' } });
    const server = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': res.body.license.key } });
    expect(server.body).toMatchObject({ trial: true, email: 'trier@example.com', activeDevices: [{ identifier: 'mac-1' }] });
    const validated = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: res.body.license.key, productId: p.id, deviceIdentifier: 'mac-1' } });
    expect(validated.body.isValid).toBe(true);
  });

  it('one trial per product and device, ever: again is 409 with the trial license status, also once it expired', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { trial: { enabled: true, days: 3 } });
    const first = await start({ productId: p.id, deviceIdentifier: 'pc' });
    const again = await start({ productId: p.id, deviceIdentifier: 'pc' });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'trial_already_used', status: 'active' } } });
    clock.advance(4 * DAY);
    const later = await start({ productId: p.id, deviceIdentifier: 'pc' });
    expect(later.body.error).toMatchObject({ code: 'trial_already_used', status: 'expired' });
    expect((await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: first.body.license.key, productId: p.id, deviceIdentifier: 'pc' } })).body.reason).toBe('expired');
    await call(ctx, { method: 'DELETE', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': first.body.license.key } });
    expect((await start({ productId: p.id, deviceIdentifier: 'pc' })).body.error).toMatchObject({ code: 'trial_already_used', status: null });
    // Another device, or the same device on another product, may start its own.
    expect((await start({ productId: p.id, deviceIdentifier: 'pc-2' })).status).toBe(200);
    const q = await createProduct(ctx, t, { trial: { enabled: true } });
    expect((await start({ productId: q.id, deviceIdentifier: 'pc' })).status).toBe(200);
  });

  it('20 concurrent trial requests from one device create exactly one license', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { trial: { enabled: true } });
    const results = await Promise.all(Array.from({ length: 20 }, () => start({ productId: p.id, deviceIdentifier: 'same' })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(19);
    const licenses = await ctx.store.read.all(ctx.store.db.selectFrom('licenses').select('key').where('product_id', '=', p.id));
    expect(licenses).toHaveLength(1);
  });
});

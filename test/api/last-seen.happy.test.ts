import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { manualClock, refreshToken, configureTokens } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

const MINUTE = 60_000;

forEachStore('devices lastSeenAt', (kind) => {
  const clock = manualClock(Date.parse('2027-05-01T08:00:00.000Z'));
  const ctx = useTestApp(kind, { clock: clock.now });
  const iso = (ms: number) => new Date(ms).toISOString();
  const lastSeen = async (key: string, identifier: string) =>
    (await ctx.store.read.first(ctx.store.db.selectFrom('devices').select('last_seen_at').where('license_key', '=', key).where('identifier', '=', identifier)))?.last_seen_at;
  const writesOf = async <T>(work: () => Promise<T>) => {
    // How many device writes `work` leaves pending for the flush (a validation writes nothing itself).
    const before = ctx.services.licenses.sightings.size;
    const result = await work();
    return { result, pendingAdded: ctx.services.licenses.sightings.size - before };
  };

  it('activation sets lastSeenAt; validations are coalesced in memory and written by the flush, at most once per device', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    await configureTokens(ctx, t, p.id);
    const l = await createLicense(ctx, t, p.id);
    const activatedAt = clock.now();
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc', deviceName: 'PC' } });
    expect(Number(await lastSeen(l.key, 'pc'))).toBe(activatedAt);
    await ctx.services.licenses.sightings.flush(); // other suites' sightings out of the way
    clock.advance(5 * MINUTE);
    const { pendingAdded } = await writesOf(async () => {
      for (let i = 0; i < 20; i++) await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc' } });
    });
    expect(pendingAdded).toBe(1); // one pending write for the device, however many validations
    expect(Number(await lastSeen(l.key, 'pc'))).toBe(activatedAt); // nothing written yet
    clock.advance(MINUTE);
    await refreshToken(ctx, l.key, p.id, 'pc');
    await ctx.services.licenses.sightings.flush();
    expect(Number(await lastSeen(l.key, 'pc'))).toBe(clock.now());
    const view = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } });
    expect(view.body.activeDevices[0].lastSeenAt).toBe(iso(clock.now()));
  });

  it('an invalid validation is not a sighting, and a device removed before the flush is skipped', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc', deviceName: 'PC' } });
    await ctx.services.licenses.sightings.flush();
    const { pendingAdded } = await writesOf(() => call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'ghost' } }));
    expect(pendingAdded).toBe(0);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc' } });
    await call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc' } });
    await ctx.services.licenses.sightings.flush();
    expect(await lastSeen(l.key, 'pc')).toBeUndefined();
  });

  it('a flush never moves lastSeenAt back (a heartbeat wrote a later time meanwhile)', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { floating: { enabled: true } });
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'vm', deviceName: 'VM' } });
    await ctx.services.licenses.sightings.flush();
    clock.advance(MINUTE);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'vm' } });
    clock.advance(MINUTE);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/heartbeat', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'vm' } });
    expect(Number(await lastSeen(l.key, 'vm'))).toBe(clock.now()); // the heartbeat wrote at once
    await ctx.services.licenses.sightings.flush();
    expect(Number(await lastSeen(l.key, 'vm'))).toBe(clock.now());
  });

  it('the app writes pending sightings when it closes', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc', deviceName: 'PC' } });
    clock.advance(7 * MINUTE);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc' } });
    await ctx.app.close();
    expect(Number(await lastSeen(l.key, 'pc'))).toBe(clock.now());
  });
});

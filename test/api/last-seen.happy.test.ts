import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { manualClock, refreshToken, configureTokens } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { DeviceSightings } from '../../src/modules/licenses/device-sightings.ts';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';

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

  it('two processes flush the same devices at once, seen in opposite orders: each device gets its latest time, without a deadlock', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const keys = [(await createLicense(ctx, t, p.id)).key, (await createLicense(ctx, t, p.id)).key, (await createLicense(ctx, t, p.id)).key];
    const devices = keys.flatMap((key) => Array.from({ length: 100 }, (_, i) => ({ key, identifier: `device-${i}` })));
    const start = clock.now();
    await ctx.store.write((tx) =>
      tx.run(ctx.store.db.insertInto('devices').values(devices.map((d) => ({ license_key: d.key, identifier: d.identifier, name: 'PC', activation_date: start, activation_id: null, activated_by: null, activated_name: null, last_seen_at: start })))),
    );
    // Two processes' flushes: each its own sightings over the shared store.
    const process = () => new DeviceSightings(new SqlLicenseRepository(ctx.store), new StoreUnits(ctx.store, new EventBus()));
    const [a, b] = [process(), process()];
    // a has the later time of the even devices, b of the odd ones.
    const latest = (i: number) => start + (i % 2 === 0 ? 1_000 : 2_000) + i;
    devices.forEach((d, i) => a.seen(d.key, d.identifier, i % 2 === 0 ? latest(i) : start + 1));
    for (let i = devices.length - 1; i >= 0; i--) b.seen(devices[i]!.key, devices[i]!.identifier, i % 2 === 1 ? latest(i) : start + 1);
    b.seen(keys[0]!, 'ghost', start + 5_000); // a device gone meanwhile is skipped
    await Promise.all([a.flush(), b.flush()]);
    const rows = await ctx.store.read.all(ctx.store.db.selectFrom('devices').select(['license_key', 'identifier', 'last_seen_at']).where('license_key', 'in', keys));
    const seen = new Map(rows.map((r) => [`${r.license_key}/${r.identifier}`, Number(r.last_seen_at)]));
    expect(seen.size).toBe(devices.length);
    devices.forEach((d, i) => expect(seen.get(`${d.key}/${d.identifier}`)).toBe(latest(i)));
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

import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { createServices } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import { call, createLicense, createProduct, createTenant, type TestContext, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';
import type { FastifyInstance } from 'fastify';

/**
 * Validation rows cached in memory on PostgreSQL (docs/decisions/validation-cache.md): what one
 * process changes, or anything else writing the database, is never answered from another's cache
 * once the change has reached it, nor from the changing process's own cache once its write is answered.
 */
forEachStore('validation cache', (kind) => {
  const ctx = useTestApp(kind);

  if (kind === 'sqlite') {
    it('is not used on SQLite, whose lookups are local', () => {
      expect(new SqlLicenseRepository(ctx.store, { validationCacheEntries: 1000 }).validationCache).toBeUndefined();
    });
    return;
  }

  // A second server process on the same database: its own store, change feed and cache.
  const other = {} as { store: Store; app: FastifyInstance; services: ReturnType<typeof createServices> };
  beforeAll(async () => {
    other.store = await ctx.database.open();
    other.services = createServices(other.store, ctx.config.secretKey, undefined, ctx.config);
    other.app = await buildApp({ config: ctx.config, services: other.services, logger: false });
    await other.app.ready();
  });
  afterAll(async () => {
    await other.app?.close();
    await other.store?.close();
  });

  const validate = (app: FastifyInstance, licenseKey: string, productId: string, deviceIdentifier = 'd1') =>
    call({ app } as TestContext, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey, deviceIdentifier, productId } });
  const cacheOf = (services: ReturnType<typeof createServices>) =>
    (services.licenses as unknown as { repo: SqlLicenseRepository }).repo.validationCache!;
  const live = async (store: Store) => {
    for (let i = 0; i < 1000 && !store.changes!.live; i++) await new Promise((r) => setTimeout(r, 10));
    expect(store.changes!.live).toBe(true);
  };

  async function activeLicense() {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const activated = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: 'd1', deviceName: 'PC', productId: p.id } });
    expect(activated.status).toBe(200);
    return { t, p, l, headers: { ...t.auth, 'license-key': l.key } };
  }

  it('answers repeated validations from memory', async () => {
    await live(ctx.store);
    const { p, l } = await activeLicense();
    const cache = cacheOf(ctx.services);
    const before = cache.stats();
    for (let i = 0; i < 5; i++) expect((await validate(ctx.app, l.key, p.id)).body.isValid).toBe(true);
    const after = cache.stats();
    expect(after.misses - before.misses).toBe(1);
    expect(after.hits - before.hits).toBe(4);
    const metrics = (await call(ctx, { method: 'GET', url: '/metrics' })).raw.body;
    expect(metrics).toMatch(new RegExp(`^tessera_validation_cache_lookups_total\\{result="hit"\\} ${after.hits}$`, 'm'));
    expect(metrics).toMatch(/^tessera_validation_cache_entries [1-9]\d*$/m);
  });

  it("a write unit returns only once its changes have reached this process's listeners", async () => {
    await live(ctx.store);
    const { l } = await activeLicense();
    const heard: string[] = [];
    ctx.store.changes!.subscribe({ changed: (key) => heard.push(key), reset: () => {} });
    await live(ctx.store);
    for (let i = 2; i < 22; i++) {
      heard.length = 0;
      await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('licenses').set({ max_devices: i }).where('key', '=', l.key)));
      expect(heard).toContain(l.key); // no turn of the event loop in between: the fence, not luck
    }
  });

  it('writing lastSeenAt drops no cached row (migration 018), a heartbeat renewing a lease does', async () => {
    await live(ctx.store);
    const { p, l } = await activeLicense();
    const cache = cacheOf(ctx.services);
    await validate(ctx.app, l.key, p.id);
    await ctx.services.licenses.sightings.flush();
    const before = cache.stats();
    expect((await validate(ctx.app, l.key, p.id)).body.isValid).toBe(true);
    expect(cache.stats().hits - before.hits).toBe(1);

    const t = await createTenant(ctx);
    const floating = await createProduct(ctx, t, { floating: { enabled: true } });
    const fl = await createLicense(ctx, t, floating.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: fl.key, deviceIdentifier: 'd1', deviceName: 'VM', productId: floating.id } });
    const first = await validate(ctx.app, fl.key, floating.id);
    const beat = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/heartbeat', json: { licenseKey: fl.key, deviceIdentifier: 'd1', productId: floating.id } });
    expect(beat.body.device.leaseExpiresAt >= first.body.device.leaseExpiresAt).toBe(true);
    expect((await validate(ctx.app, fl.key, floating.id)).body.device.leaseExpiresAt).toBe(beat.body.device.leaseExpiresAt);
  });

  it('a new device drops no cached row in any process (migration 035); removing one still does', async () => {
    await Promise.all([live(ctx.store), live(other.store)]);
    const { p, l } = await activeLicense();
    const heard: string[] = [];
    other.store.changes!.subscribe({ changed: (key) => heard.push(key), reset: () => {} });
    await live(other.store);
    for (const app of [ctx.app, other.app]) await validate(app, l.key, p.id);
    const before = [cacheOf(ctx.services).stats(), cacheOf(other.services).stats()];
    const added = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: 'd2', deviceName: 'Laptop', productId: p.id } });
    expect(added.status).toBe(200);
    await other.store.changes!.fence(); // whatever the activation notified has reached the other process
    expect(heard).not.toContain(l.key);
    for (const app of [ctx.app, other.app]) expect((await validate(app, l.key, p.id)).body.isValid).toBe(true);
    expect([cacheOf(ctx.services).stats().hits - before[0]!.hits, cacheOf(other.services).stats().hits - before[1]!.hits]).toEqual([1, 1]);
    expect((await validate(other.app, l.key, p.id, 'd2')).body.isValid).toBe(true); // read, not cached before

    await call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'd1' } });
    expect((await validate(ctx.app, l.key, p.id)).body.isValid).toBe(false);
    await other.store.changes!.fence();
    expect(heard).toContain(l.key);
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(false);
  });

  it("a change of the product's lease length reaches the cache: the next heartbeat uses it", async () => {
    await live(ctx.store);
    const { t, p, l } = await activeLicense();
    await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { floating: { enabled: true, leaseSeconds: 600 } } });
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: 'vm', deviceName: 'VM', productId: p.id } });
    await validate(ctx.app, l.key, p.id, 'vm'); // cached with a 600 s lease length
    await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { floating: { leaseSeconds: 3600 } } });
    const before = Date.now();
    const beat = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/heartbeat', json: { licenseKey: l.key, deviceIdentifier: 'vm', productId: p.id } });
    expect(Date.parse(beat.body.device.leaseExpiresAt) - before).toBeGreaterThan(3000_000);
    // A device activated before the product turned floating holds no lease: its heartbeat is a validation.
    expect((await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/heartbeat', json: { licenseKey: l.key, deviceIdentifier: 'd1', productId: p.id } })).body.isValid).toBe(true);
  });

  it('a revocation answered by this process is seen by its next validation', async () => {
    const { p, l, headers } = await activeLicense();
    expect((await validate(ctx.app, l.key, p.id)).body.isValid).toBe(true);
    const revoked = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: true } });
    expect(revoked.status).toBe(200);
    expect((await validate(ctx.app, l.key, p.id)).body).toMatchObject({ isValid: false, reason: 'revoked' });
  });

  it("another process's change reaches this one's cache (device removed, license revoked, fallback changed)", async () => {
    await live(other.store);
    const { t, p, l, headers } = await activeLicense();
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(true);
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(true); // cached there now

    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers })).status).toBe(200);
    await other.store.changes!.fence(); // what the other process has heard by now includes the removal
    expect((await validate(other.app, l.key, p.id)).body).toMatchObject({ isValid: false, reason: 'device_not_activated' });

    // Expired but for the product's fallback: the cached row carries the product's setting.
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: 'd1', deviceName: 'PC', productId: p.id } });
    await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { fallbackEnabled: true } });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { type: 'timed', expiresAt: '2020-01-01' } });
    await other.store.changes!.fence();
    expect((await validate(other.app, l.key, p.id)).body).toMatchObject({ isValid: true, status: 'fallbacked' });
    await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { fallbackEnabled: false } });
    await other.store.changes!.fence();
    expect((await validate(other.app, l.key, p.id)).body).toMatchObject({ isValid: false, reason: 'expired' });
  });

  it('a change made outside the service (psql) reaches every cache', async () => {
    const { p, l } = await activeLicense();
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(true);
    const client = new pg.Client({ connectionString: ctx.database.env.DATABASE_URL });
    await client.connect();
    await client.query('update licenses set revoked = true where key = $1', [l.key]);
    await client.end();
    await other.store.changes!.fence();
    expect((await validate(other.app, l.key, p.id)).body).toMatchObject({ isValid: false, reason: 'revoked' });
  });

  it('trusts nothing while its feed is disconnected, and caches again once it is back', async () => {
    await live(other.store);
    const { p, l, headers } = await activeLicense();
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(true);
    // Cut the other process's listening connection, then revoke while it is down.
    const client = new pg.Client({ connectionString: ctx.database.env.DATABASE_URL });
    await client.connect();
    await client.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'tessera change feed'`);
    await client.end();
    for (let i = 0; i < 100 && other.store.changes!.live; i++) await new Promise((r) => setTimeout(r, 10));
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: true } });
    expect((await validate(other.app, l.key, p.id)).body).toMatchObject({ isValid: false, reason: 'revoked' });
    await live(other.store);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: false } });
    await other.store.changes!.fence();
    const cache = cacheOf(other.services);
    const before = cache.stats();
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(true);
    expect((await validate(other.app, l.key, p.id)).body.isValid).toBe(true);
    expect(cache.stats().hits - before.hits).toBe(1);
  });

  it('validations racing revocations: none answered after its revocation was answered is valid', async () => {
    await live(other.store);
    const licenses = await Promise.all(Array.from({ length: 8 }, () => activeLicense()));
    const stale: string[] = [];
    let running = true;
    const revokedAt = new Map<string, number>();
    const validators = [ctx.app, other.app].map(async (app) => {
      while (running) {
        for (const { p, l } of licenses) {
          const asked = performance.now();
          const res = await validate(app, l.key, p.id);
          const at = revokedAt.get(l.key);
          // Asked after the revocation's answer, in this process: must be invalid.
          if (app === ctx.app && at !== undefined && asked > at && res.body.isValid) stale.push(l.key);
        }
      }
    });
    for (const { l, headers } of licenses) {
      await new Promise((r) => setTimeout(r, 5));
      expect((await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: true } })).status).toBe(200);
      revokedAt.set(l.key, performance.now());
    }
    await other.store.changes!.fence();
    running = false;
    await Promise.all(validators);
    expect(stale).toEqual([]);
    for (const app of [ctx.app, other.app]) for (const { p, l } of licenses) expect((await validate(app, l.key, p.id)).body.isValid).toBe(false);
  });
});

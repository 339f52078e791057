import { beforeAll, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/core/ids.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { SqlAuditRepository } from '../../src/modules/audit/repository.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

type Entry = { id?: string; type: string; actor: unknown; changes: any; createdAt: string };

/**
 * An active device's row holds its activation's audit entry (migration 013); the entry moves into
 * `audit_events` in the unit that removes the device. These tests hold the log to read the same
 * whichever place an entry is in.
 */
forEachStore('license audit log: activations held by device rows', (kind) => {
  const ctx = useTestApp(kind);
  let tenant: Tenant;
  let productId: string;
  beforeAll(async () => {
    tenant = await createTenant(ctx);
    productId = (await createProduct(ctx, tenant)).id;
  });
  const auth = (key: string) => ({ ...tenant.auth, 'license-key': key });
  const events = async (key: string, query = ''): Promise<Entry[]> => {
    const res = await call(ctx, { method: 'GET', url: `/api/v1/licenses/events${query}`, headers: auth(key) });
    expect(res.status).toBe(200);
    return (res.body as { data: Entry[] }).data;
  };
  const logged = async (key: string) =>
    (await ctx.store.read.all(ctx.store.db.selectFrom('audit_events').select(['type']).where('license_key', '=', key).orderBy('id'))).map((r) => r.type);
  const activate = (key: string, identifier: string, name = 'Laptop') =>
    call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: key, productId, deviceIdentifier: identifier, deviceName: name } });

  it('an activation writes only its device row; its entry lists as a logged one would', async () => {
    const license = await createLicense(ctx, tenant, productId);
    const before = Date.now();
    expect((await activate(license.key, 'd1')).status).toBe(200);
    expect(await logged(license.key)).toEqual(['license.created']);
    const [entry] = await events(license.key);
    expect(entry).toMatchObject({ type: 'device.activated', actor: { type: 'public' }, changes: { device: { identifier: 'd1', name: 'Laptop', activationDate: entry!.createdAt } } });
    expect(Date.parse(entry!.createdAt)).toBeGreaterThanOrEqual(before - 1);
  });

  it('the entry reads the same after its device is removed, reset or its license deleted, and is then in the log', async () => {
    const removals: [string, (key: string) => Promise<unknown>][] = [
      ['device.removed', (key) => call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers: auth(key) })],
      ['device.removed', (key) => call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: { licenseKey: key, productId, deviceIdentifier: 'd1' } })],
      ['devices.reset', (key) => call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: auth(key) })],
      ['devices.reset', (key) => ctx.services.units.run((unit) => ctx.services.licenses.resetDevicesIn(unit, { type: 'portal', email: 'buyer@example.com' }, key))],
      ['license.deleted', (key) => call(ctx, { method: 'DELETE', url: '/api/v1/licenses', headers: auth(key) })],
    ];
    for (const [type, remove] of removals) {
      const license = await createLicense(ctx, tenant, productId);
      await activate(license.key, 'd1');
      const held = await events(license.key);
      await remove(license.key);
      const after = await events(license.key);
      expect(after[0]!.type, type).toBe(type);
      expect(after.slice(1), type).toEqual(held);
      expect(await logged(license.key), type).toEqual(['license.created', 'device.activated', type]);
    }
  });

  it("a product's forced delete moves its licenses' held entries into the log", async () => {
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: license.key, productId: product.id, deviceIdentifier: 'x', deviceName: 'X' } });
    const held = await events(license.key);
    await ctx.services.products.delete(cliPrincipal(tenant.accountId), product.id, true);
    expect(await logged(license.key)).toEqual(['license.created', 'device.activated', 'license.deleted']);
    expect((await events(license.key)).slice(1)).toEqual(held);
  });

  it('a renamed device keeps the name it was activated with in its entry, held and logged', async () => {
    const license = await createLicense(ctx, tenant, productId);
    await activate(license.key, 'd1', 'Old name');
    await activate(license.key, 'd1', 'New name');
    await activate(license.key, 'd1', 'Newer name');
    const license_ = (await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: auth(license.key) })).body as { activeDevices: { name: string }[] };
    expect(license_.activeDevices.map((d) => d.name)).toEqual(['Newer name']);
    const held = await events(license.key);
    // Each rename is an entry of its own (device.updated); the activation's entry keeps the name it had then.
    expect(held.map((e) => `${e.type}${e.changes?.device ? `:${e.changes.device.name}` : ''}`)).toEqual([
      'device.updated:Newer name',
      'device.updated:New name',
      'device.activated:Old name',
      'license.created',
    ]);
    expect(held[0]!.changes.name).toEqual({ from: 'New name', to: 'Newer name' });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers: auth(license.key) });
    const after = await events(license.key);
    expect(after.slice(1)).toEqual(held);
    expect(after[0]!.changes.device.name).toBe('Newer name');
  });

  it('pages across held and logged entries in one order, each once', async () => {
    const license = await createLicense(ctx, tenant, productId, { maxDevices: 50 });
    for (let i = 0; i < 4; i++) await activate(license.key, `d${i}`);
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers: auth(license.key) });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: auth(license.key), json: { maxDevices: 40 } });
    await activate(license.key, 'd4');
    const whole = (await events(license.key)).map((e) => `${e.type}${e.changes?.device ? `:${e.changes.device.identifier}` : ''}`);
    expect(whole).toEqual([
      'device.activated:d4',
      'license.updated',
      'device.removed:d1',
      'device.activated:d3',
      'device.activated:d2',
      'device.activated:d1',
      'device.activated:d0',
      'license.created',
    ]);
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let cursor: string | null = '';
      while (cursor !== null) {
        const res = await call(ctx, { method: 'GET', url: `/api/v1/licenses/events?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, headers: auth(license.key) });
        const page = res.body as { data: Entry[]; nextCursor: string | null };
        expect(page.data.length).toBeLessThanOrEqual(limit);
        seen.push(...page.data.map((e) => `${e.type}${e.changes?.device ? `:${e.changes.device.identifier}` : ''}`));
        cursor = page.nextCursor;
      }
      expect(seen, `limit ${limit}`).toEqual(whole);
    }
  });

  it("an import's devices are logged at once (no activation held), after their license's creation", async () => {
    const key = `HELD${kind === 'sqlite' ? 'S' : 'P'}-AAAAA-BBBBB-CCCCC-DDDDD`;
    const outcome = await ctx.services.licenses.importLicenses(cliPrincipal(tenant.accountId), [
      { key, productId, type: 'perpetual', maxDevices: 3, devices: [{ identifier: 'i1', name: 'Imported', activationDate: '2024-01-02T03:04:05.000Z' }] },
    ]);
    expect(outcome.created).toEqual([key]);
    expect(await logged(key)).toEqual(['license.created', 'device.activated']);
    const [activated] = await events(key);
    expect(activated).toMatchObject({ type: 'device.activated', actor: { type: 'cli' }, changes: { device: { identifier: 'i1', name: 'Imported', activationDate: '2024-01-02T03:04:05.000Z' } } });
  });

  it('a held entry past the retention time is not listed, and is not logged when its device goes', async () => {
    const license = await createLicense(ctx, tenant, productId);
    await activate(license.key, 'old');
    await activate(license.key, 'new');
    const old = timeOrderedId(Date.now() - 400 * DAY);
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('devices').set({ activation_id: old }).where('license_key', '=', license.key).where('identifier', '=', 'old')));
    expect((await events(license.key)).map((e) => e.changes?.device?.identifier ?? e.type)).toEqual(['new', 'license.created']);
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: auth(license.key) });
    expect(await logged(license.key)).toEqual(['license.created', 'device.activated', 'devices.reset']);
    expect((await events(license.key)).map((e) => e.type)).toEqual(['devices.reset', 'device.activated', 'license.created']);
  });

  it('a device from before migration 013 (nothing held) lists only what the log has', async () => {
    const license = await createLicense(ctx, tenant, productId);
    await ctx.store.write((tx) => tx.run(ctx.store.db.insertInto('devices').values({ license_key: license.key, identifier: 'legacy', name: 'Legacy', activation_date: Date.now() })));
    expect((await events(license.key)).map((e) => e.type)).toEqual(['license.created']);
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/legacy/remove', headers: auth(license.key) });
    expect(await logged(license.key)).toEqual(['license.created', 'device.removed']);
  });

  it("another account never sees a license's held entries", async () => {
    const other = await createTenant(ctx);
    const license = await createLicense(ctx, tenant, productId);
    await activate(license.key, 'd1');
    const repo = new SqlAuditRepository(ctx.store);
    expect(await repo.list(other.accountId, { licenseKey: license.key }, { limit: 10, since: 0 })).toEqual([]);
    expect((await repo.list(tenant.accountId, { licenseKey: license.key }, { limit: 10, since: 0 })).map((e) => e.type)).toEqual(['device.activated', 'license.created']);
  });

  it('a listing while devices are removed shows each activation once, never skipped', async () => {
    const license = await createLicense(ctx, tenant, productId, { maxDevices: 20 });
    const ids = Array.from({ length: 10 }, (_, i) => `c${i}`);
    for (const id of ids) await activate(license.key, id);
    const listings: Promise<Entry[]>[] = [];
    const removals: Promise<unknown>[] = [];
    for (const id of ids) {
      removals.push(call(ctx, { method: 'POST', url: `/api/v1/licenses/devices/${id}/remove`, headers: auth(license.key) }));
      listings.push(events(license.key, '?limit=100'), events(license.key, '?limit=100'));
    }
    await Promise.all(removals);
    for (const listing of await Promise.all(listings)) {
      const activated = listing.filter((e) => e.type === 'device.activated').map((e) => e.changes.device.identifier);
      expect(activated.sort()).toEqual([...ids].sort());
    }
  });

  it('removals of one device at once log its activation once', async () => {
    const license = await createLicense(ctx, tenant, productId);
    await activate(license.key, 'd1');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2
          ? call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers: auth(license.key) })
          : call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: auth(license.key) }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const types = await logged(license.key);
    expect(types.filter((t) => t === 'device.activated')).toHaveLength(1);
    expect(types.filter((t) => t === 'device.removed' || t === 'devices.reset')).toHaveLength(1);
    expect((await events(license.key)).filter((e) => e.type === 'device.activated')).toHaveLength(1);
  });
});

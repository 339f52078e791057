import { beforeAll, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/core/ids.ts';
import type { Actor } from '../../src/core/principal.ts';
import { UNRESTRICTED } from '../../src/core/access.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

forEachStore('license audit log (happy)', (kind) => {
  const ctx = useTestApp(kind);
  let tenant: Tenant;
  let productId: string;
  let apiKeyId: string;
  beforeAll(async () => {
    tenant = await createTenant(ctx);
    productId = (await createProduct(ctx, tenant)).id;
    const row = await ctx.store.read.first(ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', tenant.accountId));
    apiKeyId = row!.id;
  });
  const events = async (key: string, query = '') => {
    const res = await call(ctx, { method: 'GET', url: `/api/v1/licenses/events${query}`, headers: { ...tenant.auth, 'license-key': key } });
    expect(res.status).toBe(200);
    return res.body as { data: { type: string; actor: Actor; changes: any; createdAt: string }[]; nextCursor: string | null };
  };

  it('records every change through the server API with the API key as actor, newest first', async () => {
    const license = await createLicense(ctx, tenant, productId, { email: 'buyer@example.com' });
    const auth = { ...tenant.auth, 'license-key': license.key };
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: auth, json: { maxDevices: 4, type: 'timed', expiresAt: '2030-01-01' } });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: auth, json: { maxDevices: 4 } }); // no change: no entry
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: auth, json: { productId, device: { identifier: 'd1', name: 'Laptop' } } });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: auth, json: { productId, device: { identifier: 'd2', name: 'Desktop' } } });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers: auth });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: auth });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: auth, json: { revoked: true } });

    const { data, nextCursor } = await events(license.key);
    expect(nextCursor).toBeNull();
    expect(data.map((e) => e.type)).toEqual(['license.revoked', 'devices.reset', 'device.removed', 'device.activated', 'device.activated', 'license.updated', 'license.created']);
    expect(data.every((e) => e.actor.type === 'api_key' && (e.actor as { apiKeyId: string }).apiKeyId === apiKeyId)).toBe(true);
    const [revoked, reset, removed, second, , updated, created] = data;
    expect(revoked!.changes).toEqual({ revoked: { from: false, to: true } });
    expect(reset!.changes).toEqual({ devices: [{ identifier: 'd2', name: 'Desktop', activationDate: expect.stringMatching(/Z$/) }] });
    expect(removed!.changes).toMatchObject({ device: { identifier: 'd1', name: 'Laptop' } });
    expect(second!.changes).toMatchObject({ device: { identifier: 'd2', name: 'Desktop' } });
    expect(updated!.changes).toEqual({ maxDevices: { from: 3, to: 4 }, type: { from: 'perpetual', to: 'timed' }, expiresAt: { from: null, to: '2030-01-01T00:00:00.000Z' } });
    expect(created!.changes).toMatchObject({ productId: { from: null, to: productId }, maxDevices: { from: null, to: 3 }, email: { from: null, to: 'buyer@example.com' } });
    expect(data.map((e) => e.createdAt)).toEqual([...data.map((e) => e.createdAt)].sort().reverse());
  });

  it('records a re-activation that renames a device as device.updated (the name before and after); one that keeps the name records nothing', async () => {
    const license = await createLicense(ctx, tenant, productId);
    const activate = (name: string) =>
      call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: license.key, productId, deviceIdentifier: 'mac-1', deviceName: name } });
    expect((await activate('Old name')).status).toBe(200);
    expect((await activate('Old name')).status).toBe(200); // the same name: no change, no entry
    expect((await activate('New name')).status).toBe(200);
    const { data } = await events(license.key);
    expect(data.map((e) => e.type)).toEqual(['device.updated', 'device.activated', 'license.created']);
    expect(data[0]).toMatchObject({
      actor: { type: 'public' },
      changes: { device: { identifier: 'mac-1', name: 'New name', activationDate: expect.stringMatching(/Z$/) }, name: { from: 'Old name', to: 'New name' } },
    });
    // The activation's own entry keeps the name the device had then.
    expect(data[1]!.changes).toMatchObject({ device: { identifier: 'mac-1', name: 'Old name' } });
  });

  it('names the public API, the portal, a dashboard user and a payment provider as actors', async () => {
    const provider: Actor = { type: 'provider', provider: 'stripe' };
    const bought = await ctx.services.licenses.create({ accountId: tenant.accountId, actor: provider, access: UNRESTRICTED }, { productId, type: 'perpetual', maxDevices: 2 });
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: bought.key, productId, deviceIdentifier: 'p1', deviceName: 'Phone' } });
    await call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: { licenseKey: bought.key, productId, deviceIdentifier: 'p1' } });
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: bought.key, productId, deviceIdentifier: 'p2', deviceName: 'Tablet' } });
    const portal: Actor = { type: 'portal', email: 'buyer@example.com' };
    await ctx.services.units.run((unit) => ctx.services.licenses.resetDevicesIn(unit, portal, bought.key));
    const dashboard: Actor = { type: 'dashboard_user', userId: tenant.accountId };
    await ctx.services.licenses.update({ accountId: tenant.accountId, actor: dashboard, access: UNRESTRICTED }, bought.key, { maxDevices: 9 });

    const { data } = await events(bought.key);
    expect(data.map((e) => [e.type, e.actor])).toEqual([
      ['license.updated', dashboard],
      ['devices.reset', portal],
      ['device.activated', { type: 'public' }],
      ['device.removed', { type: 'public' }],
      ['device.activated', { type: 'public' }],
      ['license.created', provider],
    ]);
  });

  it("keeps a deleted license's entries, with the delete last", async () => {
    const license = await createLicense(ctx, tenant, productId);
    const auth = { ...tenant.auth, 'license-key': license.key };
    expect((await call(ctx, { method: 'DELETE', url: '/api/v1/licenses', headers: auth })).status).toBe(200);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: auth })).status).toBe(404);
    const { data } = await events(license.key);
    expect(data.map((e) => e.type)).toEqual(['license.deleted', 'license.created']);
    expect(data[0]!.changes).toBeNull();
  });

  it('pages with limit and cursor (newest first, each entry once)', async () => {
    const license = await createLicense(ctx, tenant, productId, { maxDevices: 50 });
    const auth = { ...tenant.auth, 'license-key': license.key };
    for (let i = 0; i < 6; i++) await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: auth, json: { productId, device: { identifier: `d${i}`, name: 'n' } } });
    const seen: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    while (cursor !== null) {
      const page = await events(license.key, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.data.map((e) => e.changes?.device?.identifier ?? e.type));
      cursor = page.nextCursor;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(['d5', 'd4', 'd3', 'd2', 'd1', 'd0', 'license.created']);
  });

  it('purges entries past the retention time', async () => {
    const license = await createLicense(ctx, tenant, productId);
    const now = Date.now();
    // Made 400 days ago: the id carries the time (entries are purged by it).
    const old = now - 400 * DAY;
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('audit_events').set({ id: timeOrderedId(old), created_at: old }).where('license_key', '=', license.key)));
    const kept = await createLicense(ctx, tenant, productId);
    expect(await ctx.services.audit.purge(now)).toBeGreaterThanOrEqual(1);
    expect((await events(license.key)).data).toEqual([]);
    expect((await events(kept.key)).data.map((e) => e.type)).toEqual(['license.created']);
  });
});

forEachStore('license audit log (errors and isolation)', (kind) => {
  const ctx = useTestApp(kind);
  let a: Tenant;
  let b: Tenant;
  beforeAll(async () => {
    a = await createTenant(ctx);
    b = await createTenant(ctx);
  });

  it("answers 404 for an unknown key and for another account's license, deleted or not", async () => {
    const license = await createLicense(ctx, a, (await createProduct(ctx, a)).id);
    for (const key of ['NOPE0-NOPE0-NOPE0-NOPE0-NOPE0', license.key]) {
      const res = await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...b.auth, 'license-key': key } });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    await call(ctx, { method: 'DELETE', url: '/api/v1/licenses', headers: { ...a.auth, 'license-key': license.key } });
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...b.auth, 'license-key': license.key } })).status).toBe(404);
  });

  it('refuses bad paging and a missing key with a 400, and no API key with a 401', async () => {
    const license = await createLicense(ctx, a, (await createProduct(ctx, a)).id);
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'cursor=garbage']) {
      const res = await call(ctx, { method: 'GET', url: `/api/v1/licenses/events?${query}`, headers: { ...a.auth, 'license-key': license.key } });
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: a.auth })).status).toBe(400);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { 'license-key': license.key } })).status).toBe(401);
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/node/src/index.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

forEachStore('webhooks API (happy)', (kind) => {
  // The receiver is on loopback: allowed here, refused by default (webhooks.security).
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, app: { mail: { worker: { pollMs: 20 } } } });
  let tenant: Tenant;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    tenant = await createTenant(ctx);
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver?.close());

  const createEndpoint = async (events: string[], url = receiver.url, t = tenant) => {
    const res = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: t.auth, json: { url, events, description: 'Ops' } });
    expect(res.status).toBe(200);
    return res.body as { id: string; secret: string };
  };
  const deleteEndpoint = (id: string) => call(ctx, { method: 'DELETE', url: `/api/v1/webhooks/${id}`, headers: tenant.auth });

  it('creates an endpoint with a secret shown once, lists, gets, updates and deletes it', async () => {
    const created = await createEndpoint(['license.created', 'device.activated', 'license.created']);
    expect(created).toMatchObject({
      id: expect.stringMatching(/^we_/),
      url: receiver.url,
      description: 'Ops',
      events: ['license.created', 'device.activated'],
      enabled: true,
      disabledAt: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9]{32}$/),
    });
    const listed = await call(ctx, { method: 'GET', url: '/api/v1/webhooks', headers: tenant.auth });
    const { secret, ...shown } = created;
    expect(listed.body.data).toContainEqual(shown);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    const stored = await ctx.store.read.first(ctx.store.db.selectFrom('webhook_endpoints').select('secret_sealed').where('id', '=', created.id));
    expect(stored!.secret_sealed).not.toContain(secret); // sealed at rest

    const updated = await call(ctx, { method: 'PATCH', url: `/api/v1/webhooks/${created.id}`, headers: tenant.auth, json: { events: ['*', 'license.deleted'], description: null } });
    expect(updated.body).toMatchObject({ events: ['*'], description: null });
    expect((await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${created.id}`, headers: tenant.auth })).body).toEqual(updated.body);

    expect((await deleteEndpoint(created.id)).status).toBe(200);
    expect((await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${created.id}`, headers: tenant.auth })).status).toBe(404);
  });

  it('lists at most 100 devices in a body, with the full count beside them, whatever the license holds', async () => {
    const endpoint = await createEndpoint(['device.activated', 'devices.reset']);
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id, { maxDevices: 200 });
    const auth = { ...tenant.auth, 'license-key': license.key };
    const ids = Array.from({ length: 103 }, (_, i) => `device-${String(i).padStart(3, '0')}`);
    for (const identifier of ids) {
      const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: auth, json: { productId: product.id, device: { identifier, name: 'n' } } });
      expect(res.status).toBe(200);
    }
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: auth });
    const mine = () => receiver.received.filter((r) => r.json.data.license?.key === license.key);
    await waitFor(() => mine().length === ids.length + 1, { message: 'every activation and the reset' });
    const data = (type: string) => mine().filter((r) => r.json.type === type).map((r) => r.json.data);

    const activated = data('device.activated');
    const at = (n: number) => activated.find((d) => d.device.identifier === ids[n - 1])!;
    // Up to 100 devices: all of them, in the API's order.
    expect(at(100).license.activeDeviceCount).toBe(100);
    expect(at(100).license.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(ids.slice(0, 100));
    // Past 100: 100 of them, each a device of the license, and the count.
    for (const n of [101, 103]) {
      const { license: shown } = at(n);
      expect(shown.activeDeviceCount).toBe(n);
      expect(shown.activeDevices).toHaveLength(100);
      expect(new Set(shown.activeDevices.map((d: { identifier: string }) => d.identifier)).size).toBe(100);
      for (const d of shown.activeDevices) expect(ids.slice(0, n)).toContain(d.identifier);
    }
    const [reset] = data('devices.reset');
    expect(reset.deviceCount).toBe(103);
    expect(reset.devices).toHaveLength(100);
    expect(reset.license).toMatchObject({ activeDevices: [], activeDeviceCount: 0 });
    await deleteEndpoint(endpoint.id);
  });

  it('delivers each license event with a signature the @tessera/node helper verifies, and logs the attempt', async () => {
    const endpoint = await createEndpoint(['*']);
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id, { email: 'buyer@example.com' });
    const auth = { ...tenant.auth, 'license-key': license.key };
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: auth, json: { maxDevices: 5 } });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: auth, json: { productId: product.id, device: { identifier: 'd1', name: 'Laptop' } } });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: auth, json: { productId: product.id, device: { identifier: 'd2', name: 'Desktop' } } });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/d1/remove', headers: auth });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: auth });
    await call(ctx, { method: 'DELETE', url: '/api/v1/licenses', headers: auth });

    const types = ['license.created', 'license.updated', 'device.activated', 'device.activated', 'device.removed', 'devices.reset', 'license.deleted'];
    const mine = () => receiver.received.filter((r) => r.json.data.license?.key === license.key);
    await waitFor(() => mine().length === types.length, { message: 'seven deliveries' });
    expect(mine().map((r) => r.json.type).sort()).toEqual([...types].sort());

    for (const r of mine()) {
      const event = verifyWebhook(r.body, r.headers['tessera-signature'], endpoint.secret);
      expect(event).toEqual(r.json);
      expect(r.headers['tessera-event-id']).toBe(r.json.id);
      expect(r.json).toMatchObject({ id: expect.stringMatching(/^evt_/), createdAt: expect.stringMatching(/Z$/) });
      expect(() => verifyWebhook(r.body, r.headers['tessera-signature'], 'whsec_wrong')).toThrow(/does not match/);
    }
    const byType = (type: string) => mine().filter((r) => r.json.type === type).map((r) => r.json.data);
    expect(byType('license.created')[0]).toEqual({
      license: { key: license.key, userId: tenant.accountId, productId: product.id, type: 'perpetual', expiresAt: null, revoked: false, email: 'buyer@example.com', maxDevices: 3, activeDevices: [], createdAt: license.createdAt, entitlements: [], metadata: {}, trial: false, activeDeviceCount: 0 },
    });
    expect(byType('license.updated')[0]).toMatchObject({ license: { maxDevices: 5 }, changes: { maxDevices: { from: 3, to: 5 } } });
    const second = byType('device.activated').find((d) => d.device.identifier === 'd2');
    expect(second).toMatchObject({ device: { identifier: 'd2', name: 'Desktop' }, license: { activeDevices: [{ identifier: 'd1' }, { identifier: 'd2' }], activeDeviceCount: 2 } });
    expect(byType('device.removed')[0]).toMatchObject({ device: { identifier: 'd1' }, license: { activeDevices: [{ identifier: 'd2' }], activeDeviceCount: 1 } });
    expect(byType('devices.reset')[0]).toMatchObject({ devices: [{ identifier: 'd2', name: 'Desktop' }], deviceCount: 1, license: { activeDevices: [], activeDeviceCount: 0 } });
    expect(byType('license.deleted')[0]).toMatchObject({ license: { key: license.key, maxDevices: 5, activeDevices: [], activeDeviceCount: 0 } });

    const deliveries = await waitFor(
      async () => {
        const res = await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries`, headers: tenant.auth });
        return res.body.data.length === types.length && res.body.data.every((d: any) => d.status === 'succeeded') && res.body;
      },
      { message: 'seven succeeded deliveries' },
    );
    expect(deliveries.data[0]).toMatchObject({
      id: expect.stringMatching(/^wd_/),
      eventType: 'license.deleted',
      attemptCount: 1,
      lastStatusCode: 200,
      nextAttemptAt: null,
      attempts: [{ statusCode: 200, success: true, error: null, durationMs: expect.any(Number) }],
    });
    await deleteEndpoint(endpoint.id);
  });

  it('sends device.updated when a re-activation renames a device (nothing when the name stays)', async () => {
    const endpoint = await createEndpoint(['device.updated', 'device.activated']);
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id);
    const activate = (name: string) =>
      call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...tenant.auth, 'license-key': license.key }, json: { productId: product.id, device: { identifier: 'pc-1', name } } });
    await activate('Workstation');
    await activate('Workstation');
    await activate('Renamed workstation');
    const mine = () => receiver.received.filter((r) => r.json.data.license?.key === license.key);
    await waitFor(() => mine().length === 2, { message: 'two deliveries' });
    await new Promise((r) => setTimeout(r, 200)); // no third one follows
    expect(mine().map((r) => r.json.type).sort()).toEqual(['device.activated', 'device.updated']);
    const updated = mine().find((r) => r.json.type === 'device.updated')!.json.data;
    expect(updated).toMatchObject({
      device: { identifier: 'pc-1', name: 'Renamed workstation', activationDate: expect.stringMatching(/Z$/) },
      changes: { name: { from: 'Workstation', to: 'Renamed workstation' } },
      license: { key: license.key, activeDevices: [{ identifier: 'pc-1', name: 'Renamed workstation' }], activeDeviceCount: 1 },
    });
    await deleteEndpoint(endpoint.id);
  });

  it('sends only the subscribed events, and pages deliveries newest first', async () => {
    const endpoint = await createEndpoint(['license.created']);
    const product = await createProduct(ctx, tenant);
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) keys.push((await createLicense(ctx, tenant, product.id)).key);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...tenant.auth, 'license-key': keys[0]! }, json: { revoked: true } });
    const page1 = await waitFor(async () => {
      const res = await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries?limit=2`, headers: tenant.auth });
      return res.body.nextCursor && res.body;
    });
    const page2 = (await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries?limit=2&cursor=${page1.nextCursor}`, headers: tenant.auth })).body;
    const all = [...page1.data, ...page2.data];
    expect(page2.nextCursor).toBeNull();
    expect(all.map((d: any) => d.eventType)).toEqual(['license.created', 'license.created', 'license.created']);
    expect(all.map((d: any) => d.createdAt)).toEqual([...all.map((d: any) => d.createdAt)].sort().reverse());
    await deleteEndpoint(endpoint.id);
  });

  it('redelivers an event as a new delivery with the same event id and body', async () => {
    const endpoint = await createEndpoint(['license.created']);
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id);
    const first = await waitFor(() => receiver.received.find((r) => r.json.data.license.key === license.key));
    const [delivery] = (await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries`, headers: tenant.auth })).body.data;
    const res = await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`, headers: tenant.auth });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^wd_/), eventId: first.json.id, status: 'pending', attempts: [] });
    expect(res.body.id).not.toBe(delivery.id);
    await waitFor(() => receiver.received.filter((r) => r.json.id === first.json.id).length === 2, { message: 'the redelivery' });
    const again = receiver.received.filter((r) => r.json.id === first.json.id)[1]!;
    expect(again.body).toBe(first.body);
    verifyWebhook(again.body, again.headers['tessera-signature'], endpoint.secret);
    await deleteEndpoint(endpoint.id);
  });

  it('keeps what a disabled endpoint missed as failed deliveries, sent once it is enabled and they are redelivered', async () => {
    const endpoint = await createEndpoint(['license.created']);
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('webhook_endpoints').set({ enabled: 0, disabled_at: Date.now(), failing_since: 1 }).where('id', '=', endpoint.id)));
    const product = await createProduct(ctx, tenant);
    const license = await createLicense(ctx, tenant, product.id);
    const [missed, ...more] = (await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries`, headers: tenant.auth })).body.data;
    expect(more).toEqual([]);
    // Nothing sent: failed at once, the reason in its one attempt, no job left for the worker.
    expect(missed).toMatchObject({ eventType: 'license.created', status: 'failed', lastStatusCode: null, nextAttemptAt: null, deliveredAt: null });
    expect(missed.attempts).toEqual([expect.objectContaining({ statusCode: null, success: false, error: 'endpoint disabled' })]);
    const jobs = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('id').where('kind', '=', 'webhook').where('payload', 'like', `%${missed.id}%`));
    expect(jobs).toEqual([]);
    const refused = await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/deliveries/${missed.id}/redeliver`, headers: tenant.auth });
    expect(refused.status).toBe(400);

    const res = await call(ctx, { method: 'PATCH', url: `/api/v1/webhooks/${endpoint.id}`, headers: tenant.auth, json: { enabled: true } });
    expect(res.body).toMatchObject({ enabled: true, disabledAt: null });
    const row = await ctx.store.read.first(ctx.store.db.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', endpoint.id));
    expect(row!.failing_since).toBeNull();
    expect((await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/deliveries/${missed.id}/redeliver`, headers: tenant.auth })).status).toBe(200);
    await waitFor(() => receiver.received.some((r) => r.json.id === missed.eventId), { message: 'the missed event, redelivered' });
    expect(receiver.received.find((r) => r.json.id === missed.eventId)!.json.data.license.key).toBe(license.key);
    await deleteEndpoint(endpoint.id);
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { type DomainEvent, isLicenseEvent } from '../../src/core/events.ts';
import { apiKeyPrincipal, type Principal } from '../../src/core/principal.ts';
import { eventJobKind, type EventConsumer } from '../../src/modules/outbox/event-delivery.ts';
import { DEFAULT_WORKER_SETTINGS, OutboxWorker } from '../../src/modules/outbox/worker.ts';
import { createServices, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { createTestDatabase, forEachStore, type TestDatabase } from '../support/stores.ts';

const quiet = { info() {}, warn() {}, error() {} };
const settings = { pollMs: 20, queuedWaitMs: 0, leaseMs: 60_000, batchSize: 50, concurrency: 10, caps: DEFAULT_WORKER_SETTINGS.caps, maxAttempts: 3, retryBaseMs: 10, maxRetryDelayMs: 40, keepDoneMs: 60_000 };

// Every change to a license and its devices emits its domain event inside the change's unit, whoever
// asks; an event consumer receives them through the outbox after commit, and never for a rollback.
forEachStore('domain events through the outbox', (kind) => {
  const ctx = {} as { database: TestDatabase; store: Store; services: Services; principal: Principal; delivered: DomainEvent[]; failNext: number };
  const consumer: EventConsumer = {
    name: 'recorder',
    description: 'test recorder',
    types: '*',
    handle: async (event) => {
      if (ctx.failNext > 0) {
        ctx.failNext--;
        throw new Error('consumer down');
      }
      ctx.delivered.push(event);
    },
  };

  beforeAll(async () => {
    ctx.database = await createTestDatabase(kind);
    ctx.store = await ctx.database.open();
    ctx.services = createServices(ctx.store, loadConfig({ ...ctx.database.env }).secretKey, undefined, { eventConsumers: [consumer] });
    const account = await ctx.services.accounts.create({ email: `events-${kind}@example.com`, password: 'correct horse battery' });
    ctx.principal = apiKeyPrincipal(account.id, 'key_1', 'full');
    ctx.delivered = [];
    ctx.failNext = 0;
  });
  afterAll(async () => {
    await ctx.store?.close();
    await ctx.database?.drop();
  });

  const drain = () => new OutboxWorker(ctx.services.outbox, ctx.services.jobConsumers, quiet, settings).drain();
  const device = (identifier: string) => ({ identifier, name: `Laptop ${identifier}` });

  it('emits one event per change, with its actor, from every write path', async () => {
    const { licenses, products, portal } = ctx.services;
    const seen: DomainEvent[] = [];
    ctx.services.events.subscribe((event) => void seen.push(event));
    const product = await products.create(ctx.principal, { name: 'Events app' });
    const license = await licenses.create(ctx.principal, { productId: product.id, type: 'perpetual', maxDevices: 3, email: 'buyer@example.com' });
    await licenses.update(ctx.principal, license.key, { maxDevices: 5 });
    await licenses.update(ctx.principal, license.key, { maxDevices: 5 }); // no change: no event
    await licenses.publicActivate(license.key, product.id, device('a'));
    await licenses.publicActivate(license.key, product.id, { identifier: 'a', name: 'Renamed' }); // holds its slot, renamed: device.updated
    await licenses.publicActivate(license.key, product.id, { identifier: 'a', name: 'Renamed' }); // the same name: no event
    await licenses.publicRemoveDevice(license.key, product.id, 'a');
    await licenses.publicRemoveDevice(license.key, product.id, 'a'); // nothing to remove: no event
    await licenses.serverActivate(ctx.principal, license.key, product.id, device('b'));
    await licenses.resetDevices(ctx.principal, license.key);
    await licenses.serverActivate(ctx.principal, license.key, product.id, device('c'));
    expect(await portal.resetDevices({ email: 'buyer@example.com', accountId: null }, license.key)).toEqual({ outcome: 'done', removed: 1 });
    await licenses.delete(ctx.principal, license.key);

    const apiKey = { type: 'api_key', apiKeyId: 'key_1' };
    expect(seen.map((e) => [e.type, e.actor])).toEqual([
      ['license.created', apiKey],
      ['license.updated', apiKey],
      ['device.activated', { type: 'public' }],
      ['device.updated', { type: 'public' }],
      ['device.removed', { type: 'public' }],
      ['device.activated', apiKey],
      ['devices.reset', apiKey],
      ['device.activated', apiKey],
      ['devices.reset', { type: 'portal', email: 'buyer@example.com' }],
      ['license.deleted', apiKey],
    ]);
    expect(seen[1]).toMatchObject({ changes: { maxDevices: { from: 3, to: 5 } }, license: { key: license.key, maxDevices: 5 } });
    expect(seen[3]).toMatchObject({ device: { identifier: 'a', name: 'Renamed' }, changes: { name: { from: 'Laptop a', to: 'Renamed' } } });
    expect(seen[4]).toMatchObject({ device: { identifier: 'a', name: 'Renamed' } });
    expect(seen[8]).toMatchObject({ devices: [{ identifier: 'c' }] });

    await drain();
    expect(ctx.delivered.map((e) => e.type)).toEqual(seen.map((e) => e.type));
  });

  it("deletes a product's licenses through the license service: one license.deleted each", async () => {
    const product = await ctx.services.products.create(ctx.principal, { name: 'Doomed app' });
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push((await ctx.services.licenses.create(ctx.principal, { productId: product.id, type: 'perpetual', maxDevices: 1 })).key);
    ctx.delivered.length = 0;
    await expect(ctx.services.products.delete(ctx.principal, product.id, false)).rejects.toMatchObject({ code: 'product_has_licenses' });
    await ctx.services.products.delete(ctx.principal, product.id, true);
    await drain();
    expect(ctx.delivered.filter((e) => e.type === 'license.deleted').map((e) => e.license.key).sort()).toEqual([...keys].sort());
  });

  it('queues no event for a change that rolled back', async () => {
    const product = await ctx.services.products.create(ctx.principal, { name: 'Rollback app' });
    ctx.delivered.length = 0;
    // sendEmail with no address fails after the insert, inside the unit: the license and its event roll back.
    await expect(ctx.services.licenses.create(ctx.principal, { productId: product.id, type: 'perpetual', maxDevices: 1, sendEmail: true })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    const pending = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('id').where('kind', '=', eventJobKind('recorder')).where('status', '=', 'pending'));
    expect(pending).toEqual([]);
    await drain();
    expect(ctx.delivered).toEqual([]);
  });

  it('retries a failed delivery: the consumer gets the event once it recovers', async () => {
    const product = await ctx.services.products.create(ctx.principal, { name: 'Retry app' });
    ctx.delivered.length = 0;
    ctx.failNext = 1;
    const license = await ctx.services.licenses.create(ctx.principal, { productId: product.id, type: 'perpetual', maxDevices: 1 });
    // A retry delay no drain outlasts on a busy machine: the first drain ends before it is due.
    const slowRetry = () => new OutboxWorker(ctx.services.outbox, ctx.services.jobConsumers, quiet, { ...settings, retryBaseMs: 500, maxRetryDelayMs: 500 }).drain();
    await slowRetry();
    expect(ctx.delivered).toEqual([]);
    await expect.poll(async () => (await slowRetry(), ctx.delivered.filter(isLicenseEvent).map((e) => e.license.key)), { timeout: 5000 }).toEqual([license.key]);
  });
});

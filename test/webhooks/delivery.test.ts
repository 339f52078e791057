import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/node/src/index.ts';
import { loadConfig } from '../../src/config.ts';
import { apiKeyPrincipal, type Principal } from '../../src/core/principal.ts';
import { MAIL_JOB, mailConsumer } from '../../src/modules/mail/queue.ts';
import { DEFAULT_WORKER_SETTINGS, OutboxWorker } from '../../src/modules/outbox/worker.ts';
import { DISABLE_AFTER_MS, RETRY_DELAYS_MS, webhookRetryAt } from '../../src/modules/webhooks/delivery.ts';
import { WEBHOOK_JOB } from '../../src/modules/webhooks/service.ts';
import { createServices, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport } from '../support/mail.ts';
import { createTestDatabase, forEachStore, type StoreKind, type TestDatabase } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

const quiet = { info() {}, warn() {}, error() {} };
const HOUR = 3_600_000;

/** A clock tests move by hand: retry times pass without waiting. */
function manualClock(start = Date.now()) {
  let now = start;
  return Object.assign(() => now, { advance: (ms: number) => void (now += ms), set: (ms: number) => void (now = ms) });
}

describe('the webhook retry schedule', () => {
  it('retries within 30 s, then within 90 s of the event, then for more than 24 hours', () => {
    const job = (attempts: number) => ({ id: 'job-1', attempts });
    // Each attempt may take up to the answer timeout (10 s by default) before it counts as failed.
    const timeout = 10_000;
    let at = 0;
    const starts: number[] = [0];
    for (let attempts = 1; ; attempts++) {
      const next = webhookRetryAt(job(attempts), at + timeout);
      if (next === null) break;
      at = next;
      starts.push(at);
    }
    expect(starts[1]).toBeLessThanOrEqual(30_000);
    expect(starts[2]).toBeLessThanOrEqual(90_000);
    expect(starts.at(-1)!).toBeGreaterThan(24 * HOUR);
    expect(starts).toHaveLength(RETRY_DELAYS_MS.length + 1);
    expect(webhookRetryAt(job(3), 0)).toBe(webhookRetryAt(job(3), 0)); // the same time for the worker and the delivery log
  });
});

forEachStore('webhook delivery through the outbox', (kind: StoreKind) => {
  const ctx = {} as { store: Store; services: Services; database: TestDatabase; clock: ReturnType<typeof manualClock>; receiver: WebhookReceiver; mail: CapturingTransport };
  let principal: Principal;
  let accountEmail: string;
  let productId: string;

  beforeAll(async () => {
    ctx.database = await createTestDatabase(kind);
    const config = loadConfig({ ...ctx.database.env, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '300', WEBHOOK_CONNECT_TIMEOUT_MS: '300' });
    ctx.store = await ctx.database.open();
    ctx.clock = manualClock();
    ctx.services = createServices(ctx.store, config.secretKey, undefined, { ...config, clock: ctx.clock });
    ctx.receiver = await WebhookReceiver.start();
    ctx.mail = new CapturingTransport();
    accountEmail = `owner-${Date.now()}@example.com`;
    const account = await ctx.services.accounts.create({ email: accountEmail, password: 'correct horse battery' });
    principal = apiKeyPrincipal(account.id, 'key_test', 'full');
    productId = (await ctx.services.products.create(principal, { name: 'Hooks' })).id;
  });
  afterAll(async () => {
    await ctx.receiver?.close();
    await ctx.store?.close();
    await ctx.database?.drop();
  });

  /** A worker with no timer of its own: the test drains it after moving the clock. */
  const worker = () =>
    new OutboxWorker(
      ctx.services.outbox,
      { [WEBHOOK_JOB]: ctx.services.jobConsumers[WEBHOOK_JOB]!, [MAIL_JOB]: mailConsumer(ctx.mail) },
      quiet,
      { ...DEFAULT_WORKER_SETTINGS, pollMs: 20, queuedWaitMs: 0, leaseMs: 60_000, batchSize: 50, concurrency: 16, maxAttempts: 3, retryBaseMs: 10, maxRetryDelayMs: 40, keepDoneMs: 60_000 },
      ctx.clock,
    );
  const endpoint = (events = ['*']) => ctx.services.webhooks.create(principal, { url: ctx.receiver.url, events });
  const deliveryRows = (endpointId: string) => ctx.services.webhooks.deliveries(principal, endpointId, {}).then((p) => p.data);

  it('retries a receiver that answers 500, times out, then closes the connection, until it succeeds: one success logged', async () => {
    const { endpoint: e, secret } = await endpoint(['license.created']);
    const w = worker();
    ctx.receiver.answer(500, 'hang', 'close', 200);
    const eventAt = ctx.clock();
    const license = await ctx.services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 1 });
    const mine = () => ctx.receiver.received.filter((r) => r.json.data.license.key === license.key);

    await w.drain();
    let [d] = await deliveryRows(e.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 500 });
    expect(d!.nextAttemptAt! - eventAt).toBeLessThanOrEqual(30_000);
    expect(await w.drain()).toBe(0); // not due before its retry time

    ctx.clock.set(d!.nextAttemptAt!);
    await w.drain(); // hangs until the 300 ms answer timeout
    [d] = await deliveryRows(e.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 2, lastStatusCode: null });
    expect(d!.nextAttemptAt! - eventAt).toBeLessThanOrEqual(90_000);

    ctx.clock.set(d!.nextAttemptAt!);
    await w.drain(); // the connection is closed without an answer
    [d] = await deliveryRows(e.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 3, lastStatusCode: null });

    ctx.clock.set(d!.nextAttemptAt!);
    await w.drain();
    [d] = await deliveryRows(e.id);
    expect(d).toMatchObject({ status: 'succeeded', attempts: 4, lastStatusCode: 200, nextAttemptAt: null, deliveredAt: expect.any(Number) });
    expect(d!.log.map((a) => [a.statusCode, a.success])).toEqual([
      [500, false],
      [null, false],
      [null, false],
      [200, true],
    ]);
    expect(d!.log[1]!.error).toMatch(/no answer within 300 ms/);
    expect(d!.log.filter((a) => a.success)).toHaveLength(1);
    // Every attempt carried the same event, each signed afresh.
    expect(mine()).toHaveLength(4);
    expect(new Set(mine().map((r) => r.json.id)).size).toBe(1);
    for (const r of mine()) verifyWebhook(r.body, r.headers['tessera-signature'], secret, { now: ctx.clock(), toleranceSeconds: 3600 });
    ctx.clock.advance(HOUR);
    expect(await w.drain()).toBe(0); // done: never sent again
    expect(mine()).toHaveLength(4);
    await ctx.services.webhooks.delete(principal, e.id);
  });

  it('disables an endpoint that has failed for 24 hours and e-mails the account', async () => {
    const { endpoint: e } = await endpoint(['license.created']);
    const w = worker();
    ctx.receiver.fallback = 503;
    const outcomes = { ...ctx.services.webhookDeliverer.outcomes };
    try {
      const firstFailure = ctx.clock();
      await ctx.services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 1 });
      await w.drain();
      for (let i = 0; i < 20; i++) {
        const [d] = await deliveryRows(e.id);
        if (d!.status !== 'pending') break;
        ctx.clock.set(d!.nextAttemptAt!);
        await w.drain();
      }
      const after = await ctx.services.webhooks.get(principal, e.id);
      expect(after).toMatchObject({ enabled: false, disabledAt: expect.any(Number) });
      expect(after.disabledAt! - firstFailure).toBeGreaterThanOrEqual(DISABLE_AFTER_MS);
      const [d] = await deliveryRows(e.id);
      expect(d).toMatchObject({ status: 'failed', nextAttemptAt: null });
      expect(d!.log.every((a) => a.statusCode === 503)).toBe(true);
      // Counted for /metrics: every attempt but the last retrying, the last failed for good.
      expect(ctx.services.webhookDeliverer.outcomes).toEqual({ ...outcomes, retrying: outcomes.retrying + d!.log.length - 1, failed: outcomes.failed + 1 });
      const mail = await ctx.mail.waitFor(accountEmail, 'webhook_disabled');
      expect(mail.text).toContain(ctx.receiver.url);
      expect(mail.text).toContain(e.id);

      // Disabled: a new change sends nothing to it; its delivery is kept, failed, to redeliver later.
      const received = ctx.receiver.received.length;
      await ctx.services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 1 });
      await w.drain();
      const [missed, first] = await deliveryRows(e.id);
      expect(first!.id).toBe(d!.id);
      expect(missed).toMatchObject({ status: 'failed', nextAttemptAt: null });
      expect(missed!.log.map((a) => a.error)).toEqual(['endpoint disabled']);
      expect(ctx.receiver.received.length).toBe(received);
    } finally {
      ctx.receiver.fallback = 200;
      await ctx.services.webhooks.delete(principal, e.id);
    }
  });

  it('queues nothing for a change whose unit rolled back', async () => {
    const { endpoint: e } = await endpoint(['*']);
    const before = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('id').where('kind', '=', WEBHOOK_JOB));
    let key = '';
    await expect(
      ctx.services.units.run(async (unit) => {
        key = (await ctx.services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 1 }, unit)).key;
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(key).not.toBe('');
    expect(await deliveryRows(e.id)).toEqual([]);
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('id').where('kind', '=', WEBHOOK_JOB))).toEqual(before);
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('audit_events').select('id').where('license_key', '=', key))).toEqual([]);
    await ctx.services.webhooks.delete(principal, e.id);
  });

  it('lets a slow receiver hold one slot only: other deliveries go on meanwhile', async () => {
    const slow = await WebhookReceiver.start();
    slow.fallback = { delayMs: 250, status: 200 };
    const slowEndpoint = await ctx.services.webhooks.create(principal, { url: slow.url, events: ['license.created'] });
    const { endpoint: fast } = await endpoint(['license.created']);
    try {
      for (let i = 0; i < 5; i++) await ctx.services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 1 });
      const started = Date.now();
      await worker().drain();
      // Ten deliveries, five of them 250 ms each: run side by side, well under their sum.
      expect(Date.now() - started).toBeLessThan(1000);
      expect(slow.received).toHaveLength(5);
      expect((await deliveryRows(fast.id)).every((d) => d.status === 'succeeded')).toBe(true);
    } finally {
      await ctx.services.webhooks.delete(principal, slowEndpoint.endpoint.id);
      await ctx.services.webhooks.delete(principal, fast.id);
      await slow.close();
    }
  });
});

forEachStore('a slow webhook receiver and the API', (kind) => {
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '5000' } });
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    receiver.fallback = 'hang';
  });
  afterAll(() => receiver?.close());

  it('answers API calls at their usual speed while every delivery hangs', async () => {
    const tenant = await createTenant(ctx);
    await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: tenant.auth, json: { url: receiver.url, events: ['*'] } });
    const product = await createProduct(ctx, tenant);
    const slowest: number[] = [];
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      await createLicense(ctx, tenant, product.id);
      slowest.push(performance.now() - started);
    }
    // Deliveries were under way (and hanging) while the API answered.
    await waitFor(() => receiver.received.length >= 10, { message: 'hanging deliveries' });
    expect(Math.max(...slowest)).toBeLessThan(1000);
  });
});

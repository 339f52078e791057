import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config.ts';
import { createServices, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { Outbox } from '../../src/modules/mail/outbox.ts';
import { createMailTransport } from '../../src/modules/mail/transport.ts';
import { OutboxWorker, retryDelay } from '../../src/modules/mail/worker.ts';
import { CapturingTransport, waitUntil, outboxFor } from '../support/mail.ts';
import { createTestDatabase, forEachStore, type StoreKind, type TestDatabase } from '../support/stores.ts';

const quiet = { info() {}, warn() {}, error() {} };
const message = (to: string, subject = 'Hello') => ({ kind: 'test', to, replyTo: null, subject, text: `Body for ${to}`, html: `<p>Body for ${to}</p>` });
const settings = { pollMs: 20, leaseMs: 60_000, batchSize: 5, maxAttempts: 3, retryBaseMs: 10, maxRetryDelayMs: 40, keepSentMs: 60_000 };

/** A store and services with no app: no app worker competes with the workers under test. */
function useStoreOnly(kind: StoreKind) {
  const ctx = {} as { store: Store; services: Services; config: Config; database: TestDatabase };
  beforeAll(async () => {
    ctx.database = await createTestDatabase(kind);
    ctx.config = loadConfig({ ...ctx.database.env });
    ctx.store = await ctx.database.open();
    ctx.services = createServices(ctx.store, ctx.config.secretKey, undefined, ctx.config);
  });
  afterAll(async () => {
    await ctx.store?.close();
    await ctx.database?.drop();
  });
  return ctx;
}

forEachStore('mail outbox', (kind) => {
  const ctx = useStoreOnly(kind);

  it('keeps a message only when its unit of work commits', async () => {
    const outbox = ctx.services.outbox;
    await outbox.sendStep(async (tx) => void (await outbox.enqueue(tx, message('committed@example.com'))));
    await expect(
      ctx.store.write(async (tx) => {
        await outbox.enqueue(tx, message('rolled-back@example.com'));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await outboxFor(ctx.store, 'committed@example.com')).toHaveLength(1);
    expect(await outboxFor(ctx.store, 'rolled-back@example.com')).toEqual([]);
  });

  it('delivers queued messages and marks them sent', async () => {
    const transport = new CapturingTransport();
    const worker = new OutboxWorker(ctx.services.outbox, transport, quiet, settings);
    await ctx.services.outbox.sendStep(async (tx) => void (await ctx.services.outbox.enqueue(tx, message('deliver@example.com', 'First'))));
    expect(await worker.drain()).toBeGreaterThanOrEqual(1);
    expect(transport.sent.filter((m) => m.to === 'deliver@example.com').map((m) => m.subject)).toEqual(['First']);
    const [row] = await outboxFor(ctx.store, 'deliver@example.com');
    expect(row).toMatchObject({ status: 'sent', attempts: 1, lastError: null });
    expect(await worker.drain()).toBe(0);
  });

  it('retries a refused message with backoff, then gives up after the last attempt', async () => {
    const transport = new CapturingTransport();
    // Long enough that the retry is not already due when drain() looks again, even on a busy machine.
    const worker = new OutboxWorker(ctx.services.outbox, transport, quiet, { ...settings, retryBaseMs: 250, maxRetryDelayMs: 250 });
    await ctx.services.outbox.sendStep(async (tx) => void (await ctx.services.outbox.enqueue(tx, message('retry@example.com'))));
    transport.failures = 1;
    await worker.drain();
    let [row] = await outboxFor(ctx.store, 'retry@example.com');
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastError: '550 mailbox unavailable' });
    await waitUntil(async () => (await worker.drain(), (await outboxFor(ctx.store, 'retry@example.com'))[0]!.status === 'sent'));
    [row] = await outboxFor(ctx.store, 'retry@example.com');
    expect(row!.attempts).toBe(2);

    await ctx.services.outbox.sendStep(async (tx) => void (await ctx.services.outbox.enqueue(tx, message('hopeless@example.com'))));
    transport.failures = 100;
    await waitUntil(async () => (await worker.drain(), (await outboxFor(ctx.store, 'hopeless@example.com'))[0]!.status === 'failed'));
    [row] = await outboxFor(ctx.store, 'hopeless@example.com');
    expect(row!.attempts).toBe(settings.maxAttempts);
    transport.failures = 0;
  });

  it('grows the retry delay exponentially up to the cap, with bounded jitter', () => {
    const s = { retryBaseMs: 30_000, maxRetryDelayMs: 3_600_000 };
    expect([1, 2, 3, 4].map((n) => retryDelay(n, s, () => 0.5))).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(retryDelay(20, s, () => 0.5)).toBe(3_600_000);
    expect(retryDelay(1, s, () => 0)).toBe(24_000);
    expect(retryDelay(1, s, () => 1)).toBe(36_000);
  });

  it('never hands one message to two workers, even draining at the same time', async () => {
    const outbox = new Outbox(ctx.store);
    const addresses = Array.from({ length: 30 }, (_, i) => `race${i}@example.com`);
    await ctx.store.write(async (tx) => {
      for (const a of addresses) await outbox.enqueue(tx, message(a));
    });
    const transports = [new CapturingTransport(), new CapturingTransport(), new CapturingTransport()];
    const workers = transports.map((t) => new OutboxWorker(outbox, t, quiet, { ...settings, batchSize: 2 }));
    await Promise.all(workers.map((w) => w.drain()));
    const delivered = transports.flatMap((t) => t.sent.map((m) => m.to)).filter((to) => to.startsWith('race'));
    expect(delivered.sort()).toEqual([...addresses].sort());
    if (kind === 'postgres') expect(transports.filter((t) => t.sent.length > 0).length).toBeGreaterThan(1);
  });

  it('retries a message whose worker died mid-send once the claim lease has expired', async () => {
    const outbox = new Outbox(ctx.store);
    await outbox.sendStep(async (tx) => void (await outbox.enqueue(tx, message('crashed@example.com'))));
    // A worker claims it and "crashes": no outcome is ever recorded.
    const claimed = await outbox.claim('dead-worker', 150, 100);
    expect(claimed.map((m) => m.to)).toContain('crashed@example.com');
    const transport = new CapturingTransport();
    const survivor = new OutboxWorker(outbox, transport, quiet, settings);
    await survivor.drain();
    expect(transport.sent.map((m) => m.to)).not.toContain('crashed@example.com');
    await new Promise((r) => setTimeout(r, 200));
    await survivor.drain();
    expect(transport.sent.map((m) => m.to)).toContain('crashed@example.com');
    const [row] = await outboxFor(ctx.store, 'crashed@example.com');
    expect(row).toMatchObject({ status: 'sent', attempts: 2 });
  });

  it('writes .eml files under DATA_DIR/outbox when SMTP_URL is not set', async () => {
    const logged: object[] = [];
    const transport = createMailTransport({ mailFrom: 'Shop <sales@shop.example>', dataDir: ctx.config.dataDir }, { info: (o) => logged.push(o) });
    const worker = new OutboxWorker(ctx.services.outbox, transport, quiet, settings);
    const id = await ctx.store.write((tx) =>
      ctx.services.outbox.enqueue(tx, { ...message('eml@example.com', 'Ünïcode subject'), replyTo: 'help@shop.example', html: '<p>Grüße</p>' }),
    );
    await worker.drain();
    const dir = join(ctx.config.dataDir, 'outbox');
    const file = readdirSync(dir).find((f) => f.endsWith(`${id}.eml`));
    expect(file).toBeDefined();
    const eml = readFileSync(join(dir, file!), 'utf8');
    expect(eml).toContain('To: eml@example.com');
    expect(eml).toContain('From: Shop <sales@shop.example>');
    expect(eml).toContain(`Message-ID: <${id}@shop.example>`);
    expect(eml).toContain('Reply-To: help@shop.example');
    expect(eml).toMatch(/Content-Type: text\/plain/);
    expect(eml).toMatch(/Content-Type: text\/html/);
    expect(logged).toEqual([expect.objectContaining({ to: 'eml@example.com', file })]);
    expect(readdirSync(dir).some((f) => f.endsWith('.tmp'))).toBe(false);
  });

  it('does not let a hung SMTP server hold up a shutdown past the grace period', async () => {
    const hung = { description: 'hung', send: () => new Promise<void>(() => {}), close() {} };
    const worker = new OutboxWorker(ctx.services.outbox, hung, quiet, settings);
    worker.start();
    await ctx.services.outbox.sendStep(async (tx) => void (await ctx.services.outbox.enqueue(tx, message('hung@example.com'))));
    await waitUntil(async () => (await outboxFor(ctx.store, 'hung@example.com'))[0]!.attempts === 1);
    const started = Date.now();
    await worker.stop(100);
    expect(Date.now() - started).toBeLessThan(1000);
    // Still claimed by the stopped worker: another one retries it once the lease runs out.
    expect((await outboxFor(ctx.store, 'hung@example.com'))[0]!.status).toBe('pending');
  });

  it('starts with the app and stops cleanly, leaving unclaimed messages queued', async () => {
    const transport = new CapturingTransport();
    const worker = new OutboxWorker(ctx.services.outbox, transport, quiet, settings);
    worker.start();
    await ctx.services.outbox.sendStep(async (tx) => void (await ctx.services.outbox.enqueue(tx, message('running@example.com'))));
    await transport.waitFor('running@example.com');
    await worker.stop();
    await ctx.services.outbox.sendStep(async (tx) => void (await ctx.services.outbox.enqueue(tx, message('after-stop@example.com'))));
    await new Promise((r) => setTimeout(r, 100));
    expect(transport.sent.map((m) => m.to)).not.toContain('after-stop@example.com');
    expect((await outboxFor(ctx.store, 'after-stop@example.com'))[0]!.status).toBe('pending');
  });
});

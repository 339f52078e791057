import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config.ts';
import { createServices, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { toSqlQuery } from '../../src/storage/store.ts';
import { Outbox } from '../../src/modules/outbox/outbox.ts';
import { MAIL_JOB, mailConsumer } from '../../src/modules/mail/queue.ts';
import { createMailTransport, SENDS_AT_ONCE } from '../../src/modules/mail/transport.ts';
import type { MailTransport, OutgoingMail } from '../../src/modules/mail/types.ts';
import { DEFAULT_WORKER_SETTINGS, OutboxWorker, retryDelay } from '../../src/modules/outbox/worker.ts';
import { CapturingTransport, waitUntil, outboxFor } from '../support/mail.ts';
import { createTestDatabase, forEachStore, type StoreKind, type TestDatabase } from '../support/stores.ts';

const quiet = { info() {}, warn() {}, error() {} };
const message = (to: string, subject = 'Hello'): OutgoingMail => ({ kind: 'test', to, replyTo: null, subject, text: `Body for ${to}`, html: `<p>Body for ${to}</p>` });
const settings = { pollMs: 20, queuedWaitMs: 0, leaseMs: 60_000, batchSize: 5, concurrency: 10, caps: DEFAULT_WORKER_SETTINGS.caps, maxAttempts: 3, retryBaseMs: 10, maxRetryDelayMs: 40, keepDoneMs: 60_000 };

/** A clock tests move by hand: leases and retry times pass without waiting. */
function manualClock(start = Date.now()) {
  let now = start;
  return Object.assign(() => now, { advance: (ms: number) => void (now += ms) });
}

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

forEachStore('general outbox (e-mail on it)', (kind) => {
  const ctx = useStoreOnly(kind);
  const queue = (mail: OutgoingMail) => ctx.services.units.run((unit) => ctx.services.mail.queue(unit, mail));
  const mailWorker = (transport: MailTransport, extra: Partial<typeof settings> = {}, outbox = ctx.services.outbox, clock?: () => number) =>
    new OutboxWorker(outbox, { [MAIL_JOB]: mailConsumer(transport) }, quiet, { ...settings, ...extra }, clock);

  it('keeps a job only when its unit of work commits', async () => {
    await queue(message('committed@example.com'));
    await expect(
      ctx.services.units.run(async (unit) => {
        await ctx.services.mail.queue(unit, message('rolled-back@example.com'));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await outboxFor(ctx.store, 'committed@example.com')).toHaveLength(1);
    expect(await outboxFor(ctx.store, 'rolled-back@example.com')).toEqual([]);
  });

  it('gives jobs ids that sort in the order they were queued (the primary key grows at its end)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await ctx.services.units.run((unit) => ctx.services.outbox.enqueue(unit, 'ordered-kind', { i })));
    ids.push(...(await ctx.services.units.run(async (unit) => [await ctx.services.outbox.enqueue(unit, 'ordered-kind', { i: 3 }), await ctx.services.outbox.enqueue(unit, 'ordered-kind', { i: 4 })])));
    expect(new Set(ids).size).toBe(5);
    expect([...ids].sort()).toEqual(ids);
  });

  it('delivers queued mail and marks the job done', async () => {
    const transport = new CapturingTransport();
    const worker = mailWorker(transport);
    await queue(message('deliver@example.com', 'First'));
    await worker.drain();
    expect(transport.sent.filter((m) => m.to === 'deliver@example.com').map((m) => m.subject)).toEqual(['First']);
    const [row] = await outboxFor(ctx.store, 'deliver@example.com');
    expect(row).toMatchObject({ status: 'done', attempts: 1, lastError: null, kind: 'test' });
    expect(await worker.drain()).toBe(0);
  });

  it('marks jobs that finish together done in one write', async () => {
    const outbox = new Outbox(ctx.store);
    const writes: string[][] = [];
    const completeAll = outbox.completeAll.bind(outbox);
    outbox.completeAll = (ids, worker) => (writes.push([...ids]), completeAll(ids, worker));
    const transport = new CapturingTransport();
    const worker = mailWorker(transport, {}, outbox);
    const to = ['together-1@example.com', 'together-2@example.com', 'together-3@example.com'];
    for (const address of to) await queue(message(address));
    expect(await worker.drain()).toBe(3);
    expect(writes).toEqual([expect.arrayContaining((await Promise.all(to.map((a) => outboxFor(ctx.store, a)))).map(([row]) => row!.id))]);
    for (const address of to) expect((await outboxFor(ctx.store, address))[0]).toMatchObject({ status: 'done', attempts: 1 });
  });

  it('retries a sent job whose completion could not be recorded (at least once, never lost)', async () => {
    const outbox = new Outbox(ctx.store);
    outbox.completeAll = () => Promise.reject(new Error('disk full'));
    const transport = new CapturingTransport();
    await queue(message('unrecorded@example.com'));
    // A retry delay the drain cannot reach on a loaded machine: a 10 ms one was due again before the
    // drain ended, and the job went out twice within it.
    const retry = { retryBaseMs: 300, maxRetryDelayMs: 300 };
    await mailWorker(transport, retry, outbox).drain();
    expect(transport.sent.filter((m) => m.to === 'unrecorded@example.com')).toHaveLength(1);
    expect((await outboxFor(ctx.store, 'unrecorded@example.com'))[0]).toMatchObject({ status: 'pending', attempts: 1, lastError: 'disk full' });
    await new Promise((r) => setTimeout(r, retry.maxRetryDelayMs * 1.2 + 5)); // its retry time
    await mailWorker(transport).drain();
    expect((await outboxFor(ctx.store, 'unrecorded@example.com'))[0]).toMatchObject({ status: 'done', attempts: 2 });
  });

  it('retries a refused job with backoff, then marks it dead after the last attempt', async () => {
    const clock = manualClock();
    const outbox = new Outbox(ctx.store, clock);
    const transport = new CapturingTransport();
    const worker = mailWorker(transport, { retryBaseMs: 60_000, maxRetryDelayMs: 60_000 }, outbox, clock);
    await ctx.services.units.run((unit) => outbox.enqueue(unit, MAIL_JOB, message('retry@example.com')));
    transport.failures = 1;
    await worker.drain();
    let [row] = await outboxFor(ctx.store, 'retry@example.com');
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastError: '550 mailbox unavailable' });
    expect(await worker.drain()).toBe(0); // not due before its retry time
    clock.advance(60_000 * 1.2 + 1);
    await worker.drain();
    [row] = await outboxFor(ctx.store, 'retry@example.com');
    expect(row).toMatchObject({ status: 'done', attempts: 2 });

    await ctx.services.units.run((unit) => outbox.enqueue(unit, MAIL_JOB, message('hopeless@example.com')));
    transport.failures = 100;
    for (let attempt = 1; attempt <= settings.maxAttempts; attempt++) {
      await worker.drain();
      clock.advance(60_000 * 1.2 + 1);
    }
    [row] = await outboxFor(ctx.store, 'hopeless@example.com');
    expect(row).toMatchObject({ status: 'dead', attempts: settings.maxAttempts });
    expect(await worker.drain()).toBe(0); // a dead job is never tried again
    transport.failures = 0;
  });

  it('grows the retry delay exponentially up to the cap, with bounded jitter', () => {
    const s = { retryBaseMs: 30_000, maxRetryDelayMs: 3_600_000 };
    expect([1, 2, 3, 4].map((n) => retryDelay(n, s, () => 0.5))).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(retryDelay(20, s, () => 0.5)).toBe(3_600_000);
    expect(retryDelay(1, s, () => 0)).toBe(24_000);
    expect(retryDelay(1, s, () => 1)).toBe(36_000);
  });

  it('never hands one job to two workers, even draining at the same time', async () => {
    const addresses = Array.from({ length: 30 }, (_, i) => `race${i}@example.com`);
    await ctx.services.units.run(async (unit) => {
      for (const a of addresses) await ctx.services.mail.queue(unit, message(a));
    });
    const transports = [new CapturingTransport(), new CapturingTransport(), new CapturingTransport()];
    const workers = transports.map((t) => mailWorker(t, { batchSize: 2 }));
    await Promise.all(workers.map((w) => w.drain()));
    const delivered = transports.flatMap((t) => t.sent.map((m) => m.to)).filter((to) => to.startsWith('race'));
    expect(delivered.sort()).toEqual([...addresses].sort());
  });

  it('retries a job whose worker died mid-send once the claim lease has expired', async () => {
    const clock = manualClock();
    const outbox = new Outbox(ctx.store, clock);
    await ctx.services.units.run((unit) => outbox.enqueue(unit, MAIL_JOB, message('crashed@example.com')));
    // A worker claims it and "crashes": no outcome is ever recorded.
    const claimed = await outbox.claim('dead-worker', [MAIL_JOB], 150, 100);
    expect(claimed.map((j) => (j.payload as OutgoingMail).to)).toContain('crashed@example.com');
    const transport = new CapturingTransport();
    const survivor = mailWorker(transport, {}, outbox, clock);
    await survivor.drain();
    expect(transport.sent.map((m) => m.to)).not.toContain('crashed@example.com');
    clock.advance(151);
    await survivor.drain();
    expect(transport.sent.map((m) => m.to)).toContain('crashed@example.com');
    const [row] = await outboxFor(ctx.store, 'crashed@example.com');
    expect(row).toMatchObject({ status: 'done', attempts: 2 });
  });

  it('releases every live claim at once when told its holders are gone (a start holding the DATA_DIR lock): those jobs run now', async () => {
    const clock = manualClock();
    const outbox = new Outbox(ctx.store, clock);
    await ctx.services.units.run((unit) => outbox.enqueue(unit, MAIL_JOB, message('released@example.com')));
    const claimed = await outbox.claim('dead-worker', [MAIL_JOB], 5 * 60_000, 100);
    expect(claimed.map((j) => (j.payload as OutgoingMail).to)).toContain('released@example.com');
    const transport = new CapturingTransport();
    const survivor = mailWorker(transport, {}, outbox, clock);
    await survivor.drain();
    expect(transport.sent.map((m) => m.to)).not.toContain('released@example.com'); // its lease holds
    expect(await outbox.releaseClaims()).toBeGreaterThanOrEqual(1);
    await survivor.drain();
    expect(transport.sent.map((m) => m.to)).toContain('released@example.com');
    // The attempt the dead worker was on stays counted; done jobs were left alone.
    expect((await outboxFor(ctx.store, 'released@example.com'))[0]).toMatchObject({ status: 'done', attempts: 2 });
    expect(await outbox.releaseClaims()).toBe(0);
  });

  it('claims with a lease per kind: each kind gets its own, and every claim is one statement (no new SQL per call)', async () => {
    const clock = manualClock();
    const texts = new Set<string>();
    // The store as the outbox sees it, with the SQL of each statement its claims run recorded.
    const recording = new Proxy(ctx.store, {
      get(store, name) {
        if (name !== 'write') return Reflect.get(store, name, store);
        return (work: Parameters<Store['write']>[0], options?: Parameters<Store['write']>[1]) =>
          store.write((tx) => work({ ...tx, all: (query) => (texts.add(toSqlQuery(query).sql), tx.all(query)), first: tx.first.bind(tx), run: tx.run.bind(tx) }), options);
      },
    });
    const outbox = new Outbox(recording, clock);
    const leases: number[] = [];
    for (const kind of [MAIL_JOB, 'other-kind', MAIL_JOB]) {
      await ctx.services.units.run((unit) => outbox.enqueue(unit, kind, { lease: kind }));
      const [job] = await outbox.claim('lease-worker', [MAIL_JOB, 'other-kind'], 1_000, 100, { [MAIL_JOB]: 600_000 });
      const row = await ctx.store.read.first(ctx.store.db.selectFrom('outbox').select('claimed_until').where('id', '=', job!.id));
      leases.push(Number(row!.claimed_until) - clock());
      clock.advance(7);
    }
    expect(leases).toEqual([600_000, 1_000, 600_000]);
    expect(texts.size).toBe(1);
  });

  it('claims only the kinds its worker has consumers for', async () => {
    const id = await ctx.services.units.run((unit) => ctx.services.outbox.enqueue(unit, 'kind-of-a-newer-version', { any: 1 }));
    await mailWorker(new CapturingTransport()).drain();
    const row = await ctx.store.read.first(ctx.store.db.selectFrom('outbox').selectAll().where('id', '=', id));
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it(`sends at most ${SENDS_AT_ONCE} e-mails at a time, and every one`, async () => {
    let inFlight = 0;
    let most = 0;
    const sent: string[] = [];
    const slow: MailTransport = {
      description: 'slow',
      async send(mail) {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        sent.push(mail.to);
      },
      close() {},
    };
    const to = Array.from({ length: 8 }, (_, i) => `at-once-${i}@example.com`);
    for (const address of to) await queue(message(address));
    await mailWorker(slow).drain();
    expect(sent.filter((a) => a.startsWith('at-once-')).sort()).toEqual([...to].sort());
    // The worker holds up to five jobs at once (its batch): the e-mails among them wait their turn.
    expect(most).toBe(SENDS_AT_ONCE);
    for (const address of to) expect((await outboxFor(ctx.store, address))[0]).toMatchObject({ status: 'done', attempts: 1 });
  });

  it('does not hold up other kinds of jobs behind e-mails waiting their turn', async () => {
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const sent: string[] = [];
    const stuck: MailTransport = { description: 'stuck', send: async (mail) => (await blocked, void sent.push(mail.to)), close() {} };
    const handled: unknown[] = [];
    const worker = new OutboxWorker(ctx.services.outbox, { [MAIL_JOB]: mailConsumer(stuck), 'other-kind': { description: 'other', handle: async (job) => void handled.push(job.payload) } }, quiet, settings);
    for (let i = 0; i < SENDS_AT_ONCE + 1; i++) await queue(message(`waiting-${i}@example.com`));
    await ctx.services.units.run((unit) => ctx.services.outbox.enqueue(unit, 'other-kind', { n: 1 }));
    const drained = worker.drain();
    await waitUntil(() => handled.length === 1);
    expect(sent).toEqual([]); // the e-mails are still stuck (and one waits for a slot)
    release();
    await drained;
    expect(sent.filter((a) => a.startsWith('waiting-'))).toHaveLength(SENDS_AT_ONCE + 1);
  });

  it('writes .eml files under DATA_DIR/outbox when SMTP_URL is not set', async () => {
    const logged: object[] = [];
    const transport = createMailTransport({ mailFrom: 'Shop <sales@shop.example>', dataDir: ctx.config.dataDir }, { info: (o) => logged.push(o) });
    const worker = mailWorker(transport);
    const id = await queue({ ...message('eml@example.com', 'Ünïcode subject'), replyTo: 'help@shop.example', html: '<p>Grüße</p>' });
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

  it('writes a readable .txt copy beside each .eml, and logs its links only when asked (development)', async () => {
    const link = `https://licenses.example/portal?token=${'a'.repeat(90)}==&x=1`;
    for (const logLinks of [true, false]) {
      const logged: object[] = [];
      const transport = createMailTransport({ mailFrom: 'Shop <sales@shop.example>', dataDir: ctx.config.dataDir, logLinks }, { info: (o) => logged.push(o) });
      const id = await queue({ ...message(`txt-${logLinks}@example.com`, 'Your link'), text: `Open your licenses:\n${link}\n\nThanks, Grüße` });
      await mailWorker(transport).drain();
      const dir = join(ctx.config.dataDir, 'outbox');
      const eml = readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith(`${id}.eml`))!), 'utf8');
      expect(eml).not.toContain(link); // quoted-printable: = is =3D and long lines are broken
      const txt = readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith(`${id}.txt`))!), 'utf8');
      expect(txt).toContain(`To: txt-${logLinks}@example.com`);
      expect(txt).toContain('Subject: Your link');
      expect(txt).toContain(`\n${link}\n`);
      expect(txt).toContain('Grüße');
      expect(logged).toEqual([logLinks ? expect.objectContaining({ links: [link] }) : expect.not.objectContaining({ links: expect.anything() })]);
    }
  });

  it('does not let a hung SMTP server hold up a shutdown past the grace period', async () => {
    const hung = { description: 'hung', send: () => new Promise<void>(() => {}), close() {} };
    const worker = mailWorker(hung);
    worker.start();
    await queue(message('hung@example.com'));
    await waitUntil(async () => (await outboxFor(ctx.store, 'hung@example.com'))[0]!.attempts === 1);
    const started = Date.now();
    await worker.stop(100);
    expect(Date.now() - started).toBeLessThan(1000);
    // Still claimed by the stopped worker: another one retries it once the lease runs out.
    expect((await outboxFor(ctx.store, 'hung@example.com'))[0]!.status).toBe('pending');
  });

  it('claims the jobs this process queues within a few milliseconds in one write', async () => {
    const outbox = new Outbox(ctx.store);
    const claims: number[] = [];
    const claim = outbox.claim.bind(outbox);
    outbox.claim = async (...args) => {
      const jobs = await claim(...args);
      if (jobs.length > 0) claims.push(jobs.length);
      return jobs;
    };
    const transport = new CapturingTransport();
    // A window far longer than the three commits below take, however slow the machine; no poll meanwhile.
    const worker = mailWorker(transport, { queuedWaitMs: 300, pollMs: 60_000 }, outbox);
    worker.start();
    await waitUntil(() => !(worker as unknown as { running?: unknown }).running); // its first look found nothing
    const to = ['soon-1@example.com', 'soon-2@example.com', 'soon-3@example.com'];
    // One after another, 30 ms apart, each committed on its own: claimed at once, the first would go alone.
    for (const address of to) {
      await ctx.services.units.run((unit) => outbox.enqueue(unit, MAIL_JOB, message(address)));
      await new Promise((r) => setTimeout(r, 30));
    }
    for (const address of to) await transport.waitFor(address);
    await worker.stop();
    expect(claims).toEqual([3]);
  });

  it('starts and stops cleanly, leaving unclaimed jobs queued', async () => {
    const transport = new CapturingTransport();
    const worker = mailWorker(transport);
    worker.start();
    await queue(message('running@example.com'));
    await transport.waitFor('running@example.com');
    await worker.stop();
    await queue(message('after-stop@example.com'));
    // A worker still listening would claim right after the job was queued (queuedWaitMs 0 here).
    await new Promise((r) => setTimeout(r, 20));
    await ctx.store.write(async () => {});
    expect(transport.sent.map((m) => m.to)).not.toContain('after-stop@example.com');
    expect((await outboxFor(ctx.store, 'after-stop@example.com'))[0]).toMatchObject({ status: 'pending', attempts: 0 });
  });
});

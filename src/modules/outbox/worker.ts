import { randomUUID } from 'node:crypto';
import type { ClaimCaps, Job, Outbox } from './outbox.ts';

/** Does one kind of job; throws to have it retried (or dead after the last attempt). */
export interface JobConsumer {
  /** For the log line at start (e.g. where e-mail goes). */
  readonly description: string;
  /**
   * Does the job; throws to have it retried. Resolves `'completed'` when it has marked the job
   * done itself (Outbox.complete in the unit that recorded its outcome), else the worker does.
   */
  handle(job: Job): Promise<void | 'completed'>;
  /**
   * This kind's retry policy: when a failed job runs again (epoch ms), or null for dead. Without
   * it the worker's exponential backoff and maxAttempts apply (e-mail); webhooks keep their own
   * schedule (the first retries within seconds, then over more than a day).
   */
  retryAt?(job: Job, now: number): number | null;
  /** How long a claim of this kind holds (ms), when shorter than the worker's lease. */
  readonly leaseMs?: number;
  /**
   * At most this many jobs of this kind handled at once (default: as many as the worker holds);
   * the others claimed wait their turn. For work that keeps the event loop busy (building an
   * e-mail) or goes through a fixed pool (SMTP connections): more at once only crowds out the
   * requests the process serves meanwhile.
   */
  readonly concurrency?: number;
  /**
   * The worker (lane) that works this kind: kinds of one lane share its slots, kinds of another
   * never wait for them (e-mail has its own, so a backlog of webhooks never holds a purchase e-mail
   * back). Unset: the default lane. registerOutboxWorker starts one worker per lane.
   */
  readonly lane?: string;
  /** Releases what the consumer holds (connections) when the worker stops. */
  close?(): void;
}

/** Periodic upkeep run by the worker about once an hour (purging old rows, say). */
export type Housekeeping = (now: number) => Promise<unknown>;

export interface WorkerSettings {
  /** How often an idle worker looks for due jobs (ms). */
  pollMs: number;
  /**
   * How long the worker waits, after this process queued a job, before it claims (ms): the jobs
   * queued meanwhile are claimed in one write, where claiming each as it comes costs a write (a
   * commit and its sync) per job whenever requests arrive one at a time.
   */
  queuedWaitMs: number;
  /** How long a claim holds before another worker may retry the job (ms). */
  leaseMs: number;
  /** Jobs claimed per statement. */
  batchSize: number;
  /** Jobs in hand at once: a slow consumer holds one slot, not the whole worker. */
  concurrency: number;
  /**
   * Jobs in flight at once per account and per target (a webhook endpoint), across every worker on
   * the store (ClaimCaps): one tenant's backlog, or an endpoint that never answers, takes at most
   * these many slots, and the others go to everyone else's jobs.
   */
  caps: ClaimCaps;
  /** After this many attempts a job is dead. */
  maxAttempts: number;
  /** First retry delay (ms); each further attempt doubles it, up to maxRetryDelayMs. */
  retryBaseMs: number;
  maxRetryDelayMs: number;
  /** Done jobs are deleted after this long (ms). */
  keepDoneMs: number;
}

export const DEFAULT_WORKER_SETTINGS: WorkerSettings = {
  pollMs: 1000,
  queuedWaitMs: 10,
  leaseMs: 5 * 60_000,
  batchSize: 50,
  concurrency: 64,
  caps: { perAccount: 32, perTarget: 16 },
  maxAttempts: 10,
  retryBaseMs: 30_000,
  maxRetryDelayMs: 60 * 60_000,
  keepDoneMs: 30 * 24 * 60 * 60_000,
};

const PURGE_EVERY_MS = 60 * 60_000;
/** How long free slots wait for more to free up before they are refilled anyway. */
const REFILL_WAIT_MS = 20;
/**
 * How long a finished job waits for others to be marked done in the same write. A crash in that
 * window repeats the job, as a crash between a send and its completion always could.
 */
const COMPLETE_WAIT_MS = 10;

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Exponential backoff with ±20% jitter, so failed jobs from many processes spread out. */
export function retryDelay(attempts: number, s: Pick<WorkerSettings, 'retryBaseMs' | 'maxRetryDelayMs'>, random = Math.random): number {
  const delay = Math.min(s.retryBaseMs * 2 ** Math.max(0, attempts - 1), s.maxRetryDelayMs);
  return Math.round(delay * (0.8 + 0.4 * random()));
}

/**
 * Works the outbox: polls (and wakes at once when this process queues a job), claims a batch of
 * the kinds it has consumers for, hands each job to its consumer and records the outcome.
 * Delivery is at-least-once: a crash between a consumer's success and `complete` runs that job
 * again after its lease expires (e-mails carry a Message-ID derived from the job id for that).
 */
export class OutboxWorker {
  readonly id = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private started = false;
  /** Set by stop(): no new batch is claimed (a drain() called directly runs until then too). */
  private stopping = false;
  private lastPurge = 0;
  private unsubscribe: (() => void) | undefined;
  /** Wakes a drain that waits for a free slot or a new job. */
  private kick: (() => void) | undefined;
  /** Finished jobs waiting to be marked done together (completeLater). */
  private finished: { id: string; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private finishTimer: NodeJS.Timeout | undefined;
  /** A wake-up shortly after a job was queued here (queuedWaitMs). */
  private queuedTimer: NodeJS.Timeout | undefined;

  private readonly kinds: readonly string[];
  private readonly leaseByKind: Record<string, number>;
  /** The kinds handled a limited number at a time (JobConsumer.concurrency). */
  private readonly gates: Map<string, Gate>;

  constructor(
    private readonly outbox: Outbox,
    private readonly consumers: Readonly<Record<string, JobConsumer>>,
    private readonly log: Log,
    private readonly settings: WorkerSettings = DEFAULT_WORKER_SETTINGS,
    private readonly clock: () => number = Date.now,
    private readonly housekeeping: readonly Housekeeping[] = [],
  ) {
    // Only kinds this process can handle are claimed: a newer process's kinds wait for it.
    this.kinds = Object.keys(consumers);
    this.leaseByKind = Object.fromEntries(Object.entries(consumers).flatMap(([kind, c]) => (c.leaseMs === undefined ? [] : [[kind, c.leaseMs]])));
    this.gates = new Map(Object.entries(consumers).flatMap(([kind, c]) => (c.concurrency === undefined ? [] : [[kind, new Gate(c.concurrency)]])));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopping = false;
    // Each lane's worker wakes for its own kinds: a webhook queued wakes no e-mail worker.
    this.unsubscribe = this.outbox.onQueued((kind) => {
      if (this.kinds.includes(kind)) this.wakeSoon();
    });
    const consumers = Object.fromEntries(Object.entries(this.consumers).map(([kind, c]) => [kind, c.description]));
    this.log.info({ consumers }, 'outbox worker started');
    this.wake();
  }

  /**
   * Stops polling and waits for the jobs in hand (at most `graceMs`, so a hung SMTP server
   * cannot hold up a shutdown); jobs not yet claimed stay queued. A job cut off here keeps its
   * claim until the lease expires, then it is retried.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    this.started = false;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    clearTimeout(this.queuedTimer);
    this.queuedTimer = undefined;
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise((resolve) => (grace = setTimeout(resolve, graceMs)))]);
    clearTimeout(grace);
    for (const consumer of Object.values(this.consumers)) consumer.close?.();
  }

  private wakeSoon(): void {
    this.queuedTimer ??= setTimeout(() => {
      this.queuedTimer = undefined;
      this.wake();
    }, this.settings.queuedWaitMs);
  }

  private wake(): void {
    if (!this.started || this.stopping) return;
    if (this.running) {
      this.again = true;
      this.kick?.();
      return;
    }
    clearTimeout(this.timer);
    this.running = this.drain()
      .then(() => undefined)
      .catch((err) => this.log.error({ err }, 'outbox worker failed; retrying on the next poll'))
      .finally(() => {
        this.running = undefined;
        if (!this.started || this.stopping) return;
        if (this.again) {
          this.again = false;
          this.wake();
        } else {
          this.timer = setTimeout(() => this.wake(), this.settings.pollMs);
          this.timer.unref();
        }
      });
  }

  /**
   * Works every due job, at most `concurrency` at a time: a slot freed by a finished job is
   * refilled at once, and a job queued meanwhile is claimed without waiting for the slow ones in
   * hand. Returns how many were attempted once none is due and none is in hand.
   */
  async drain(): Promise<number> {
    let attempted = 0;
    const inHand = new Set<Promise<void>>();
    const { concurrency, batchSize, leaseMs } = this.settings;
    // A claim is a write (an fsync on SQLite): refilling one slot at a time would make it the
    // bottleneck, so slots are refilled a batch at a time, or after REFILL_WAIT_MS at the latest.
    const refillAt = Math.max(1, Math.min(batchSize, Math.ceil(concurrency / 4)));
    let waitedSince = 0;
    while (!this.stopping) {
      const free = concurrency - inHand.size;
      const refill = free >= refillAt || inHand.size === 0 || (free > 0 && performance.now() - waitedSince >= REFILL_WAIT_MS);
      if (!refill) {
        if (waitedSince === 0) waitedSince = performance.now();
        await this.nextSlotOrJob(inHand, REFILL_WAIT_MS);
        continue;
      }
      waitedSince = 0;
      const batch = (await this.outbox.hasDue(this.kinds, this.clock())) ? await this.outbox.claim(this.id, this.kinds, leaseMs, Math.min(batchSize, free), this.leaseByKind, this.settings.caps) : [];
      for (const job of batch) {
        const done: Promise<void> = this.work(job).finally(() => inHand.delete(done));
        inHand.add(done);
      }
      attempted += batch.length;
      if (batch.length === Math.min(batchSize, free)) continue; // more may be due
      if (inHand.size === 0) break; // nothing due (or another process took it) and nothing in hand
      // Short: nothing more is due, or the rest is held back by the caps (a flood, one busy endpoint).
      // The next claim waits for a batch's worth of finished jobs, not the first: a claim is a write,
      // and one per finished job is what a capped endpoint's deliveries would otherwise cost.
      await this.nextSlotOrJob(inHand, this.settings.pollMs, refillAt);
    }
    await Promise.all(inHand);
    await this.purgeOccasionally();
    return attempted;
  }

  /**
   * Waits until `finishes` of the jobs in hand (all of them, if fewer) have finished, a job is queued
   * in this process, or a poll interval passes.
   */
  private async nextSlotOrJob(inHand: Set<Promise<void>>, timeoutMs: number, finishes = 1): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.kick = resolve;
      timer = setTimeout(resolve, timeoutMs);
      if (finishes <= 1) return void Promise.race(inHand).then(resolve, resolve);
      let left = Math.min(finishes, inHand.size);
      const one = () => {
        if (--left === 0) resolve();
      };
      for (const job of inHand) void job.then(one, one);
    });
    clearTimeout(timer);
    this.kick = undefined;
  }

  /** Never rejects: a job whose outcome could not be recorded keeps its claim until the lease expires. */
  private async work(job: Job): Promise<void> {
    try {
      await this.attempt(job);
    } catch (err) {
      this.log.error({ err, jobId: job.id, kind: job.kind }, 'could not record an outbox job outcome; retried when its lease expires');
    }
  }

  private async attempt(job: Job): Promise<void> {
    const consumer = this.consumers[job.kind]!;
    const handle = () => consumer.handle(job);
    try {
      if ((await (this.gates.get(job.kind)?.run(handle) ?? handle())) !== 'completed') await this.completeLater(job.id);
    } catch (err) {
      const retryAt = this.retryAt(job);
      const giveUp = retryAt === null;
      const reason = err instanceof Error ? err.message : String(err);
      await this.outbox.fail(job.id, this.id, reason, retryAt);
      const entry = { err, jobId: job.id, kind: job.kind, attempts: job.attempts };
      if (giveUp) this.log.error(entry, 'outbox job failed for good (dead)');
      else this.log.warn({ ...entry, retryAt: new Date(retryAt!).toISOString() }, 'outbox job failed; will retry');
    }
  }

  /** Resolves once the job is marked done, in one write with the others finished meanwhile. */
  private completeLater(id: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.finished.push({ id, resolve, reject });
      this.finishTimer ??= setTimeout(() => {
        this.finishTimer = undefined;
        const batch = this.finished;
        this.finished = [];
        this.outbox.completeAll(batch.map((f) => f.id), this.id).then(
          () => batch.forEach((f) => f.resolve()),
          (error) => batch.forEach((f) => f.reject(error)),
        );
      }, COMPLETE_WAIT_MS);
    });
  }

  private retryAt(job: Job): number | null {
    const now = this.clock();
    const policy = this.consumers[job.kind]!.retryAt;
    if (policy) return policy(job, now);
    return job.attempts >= this.settings.maxAttempts ? null : now + retryDelay(job.attempts, this.settings);
  }

  private async purgeOccasionally(): Promise<void> {
    const now = this.clock();
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    await this.outbox.purgeDone(now - this.settings.keepDoneMs, this.kinds);
    for (const task of this.housekeeping) {
      await task(now).catch((err) => this.log.error({ err }, 'outbox housekeeping failed; retrying in an hour'));
    }
  }
}

/** Runs at most `limit` calls at once; the others wait their turn, first come, first served. */
class Gate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.limit) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The slot passes straight to the next in line.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

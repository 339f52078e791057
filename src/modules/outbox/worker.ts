import { randomUUID } from 'node:crypto';
import type { Outbox } from './outbox.ts';
import type { MailTransport, QueuedMail } from './types.ts';

export interface WorkerSettings {
  /** How often an idle worker looks for due messages (ms). */
  pollMs: number;
  /** How long a claim holds before another worker may retry the message (ms). */
  leaseMs: number;
  batchSize: number;
  /** After this many attempts a message is marked failed. */
  maxAttempts: number;
  /** First retry delay (ms); each further attempt doubles it, up to maxRetryDelayMs. */
  retryBaseMs: number;
  maxRetryDelayMs: number;
  /** Sent messages are deleted after this long (ms). */
  keepSentMs: number;
}

export const DEFAULT_WORKER_SETTINGS: WorkerSettings = {
  pollMs: 1000,
  leaseMs: 5 * 60_000,
  batchSize: 10,
  maxAttempts: 10,
  retryBaseMs: 30_000,
  maxRetryDelayMs: 60 * 60_000,
  keepSentMs: 30 * 24 * 60 * 60_000,
};

const PURGE_EVERY_MS = 60 * 60_000;

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Exponential backoff with ±20% jitter, so failed messages from many processes spread out. */
export function retryDelay(attempts: number, s: Pick<WorkerSettings, 'retryBaseMs' | 'maxRetryDelayMs'>, random = Math.random): number {
  const delay = Math.min(s.retryBaseMs * 2 ** Math.max(0, attempts - 1), s.maxRetryDelayMs);
  return Math.round(delay * (0.8 + 0.4 * random()));
}

/**
 * Delivers the outbox: polls (and wakes at once when this process queues a message), claims a
 * batch, sends each message and records the outcome. Delivery is at-least-once: a crash between
 * the SMTP answer and `markSent` sends that message again after its lease expires.
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

  constructor(
    private readonly outbox: Outbox,
    private readonly transport: MailTransport,
    private readonly log: Log,
    private readonly settings: WorkerSettings = DEFAULT_WORKER_SETTINGS,
    private readonly clock: () => number = Date.now,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopping = false;
    this.unsubscribe = this.outbox.onQueued(() => this.wake());
    this.log.info({ transport: this.transport.description }, 'e-mail outbox worker started');
    this.wake();
  }

  /**
   * Stops polling and waits for the message in hand (at most `graceMs`, so a hung SMTP server
   * cannot hold up a shutdown); messages not yet claimed stay queued. A send cut off here keeps
   * its claim until the lease expires, then it is retried.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    this.started = false;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise((resolve) => (grace = setTimeout(resolve, graceMs)))]);
    clearTimeout(grace);
    this.transport.close();
  }

  private wake(): void {
    if (!this.started || this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.drain()
      .then(() => undefined)
      .catch((err) => this.log.error({ err }, 'e-mail outbox worker failed; retrying on the next poll'))
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

  /** Delivers every due message; returns how many were attempted. */
  async drain(): Promise<number> {
    let attempted = 0;
    while (!this.stopping && (await this.outbox.hasDue(this.clock()))) {
      const batch = await this.outbox.claim(this.id, this.settings.leaseMs, this.settings.batchSize);
      if (batch.length === 0) break; // another process took them
      attempted += batch.length;
      // The batch goes out at once; the SMTP pool bounds how many connections that takes.
      await Promise.all(batch.map((mail) => this.deliver(mail)));
    }
    await this.purgeOccasionally();
    return attempted;
  }

  private async deliver(mail: QueuedMail): Promise<void> {
    try {
      await this.transport.send(mail);
      await this.outbox.markSent(mail.id, this.id);
    } catch (err) {
      const giveUp = mail.attempts >= this.settings.maxAttempts;
      const retryAt = giveUp ? null : this.clock() + retryDelay(mail.attempts, this.settings);
      const reason = err instanceof Error ? err.message : String(err);
      await this.outbox.markFailed(mail.id, this.id, reason, retryAt);
      const entry = { err, mailId: mail.id, kind: mail.kind, attempts: mail.attempts };
      if (giveUp) this.log.error(entry, 'e-mail delivery failed for good');
      else this.log.warn({ ...entry, retryAt: new Date(retryAt!).toISOString() }, 'e-mail delivery failed; will retry');
    }
  }

  private async purgeOccasionally(): Promise<void> {
    const now = this.clock();
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    await this.outbox.purgeSent(now - this.settings.keepSentMs);
  }
}

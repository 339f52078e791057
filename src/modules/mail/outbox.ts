import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Executor, Store } from '../../storage/index.ts';
import type { MailOutboxTable } from '../../storage/schema.ts';
import type { OutgoingMail, QueuedMail } from './types.ts';

const toQueued = (r: MailOutboxTable): QueuedMail => ({
  id: r.id,
  kind: r.kind,
  to: r.to_address,
  replyTo: r.reply_to,
  subject: r.subject,
  text: r.text_body,
  html: r.html_body,
  attempts: r.attempts,
  createdAt: r.created_at,
});

/**
 * The durable outbox. A message is inserted in the same unit of work as the change that causes
 * it, so it exists exactly when that change committed. Workers claim due messages with a lease
 * (`claimed_until`): on PostgreSQL with FOR UPDATE SKIP LOCKED, so several processes never take
 * the same row; a claim left behind by a crashed worker expires and the message is retried.
 */
export class Outbox {
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly store: Store,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Queues `mail` inside the caller's unit of work; returns its id. */
  async enqueue(tx: Executor, mail: OutgoingMail): Promise<string> {
    const id = randomUUID();
    const now = this.clock();
    await tx.run(
      this.store.db.insertInto('mail_outbox').values({
        id,
        kind: mail.kind,
        to_address: mail.to,
        reply_to: mail.replyTo,
        subject: mail.subject,
        text_body: mail.text,
        html_body: mail.html,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        claimed_by: null,
        claimed_until: null,
        last_error: null,
        created_at: now,
        sent_at: null,
      }),
    );
    // A hint for this process's worker; other processes find the row on their next poll.
    setTimeout(() => this.listeners.forEach((listener) => listener()), 0);
    return id;
  }

  /** Runs a queuing step as its own unit of work. */
  sendStep(step: (tx: Executor) => Promise<void>): Promise<void> {
    return this.store.write(step);
  }

  onQueued(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private dueFilter(now: number) {
    return this.store.db
      .selectFrom('mail_outbox')
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]));
  }

  /** A cheap read first, so an idle worker never opens a write transaction. */
  async hasDue(now = this.clock()): Promise<boolean> {
    return (await this.store.read.first(this.dueFilter(now).limit(1))) !== undefined;
  }

  /** Takes up to `limit` due messages for `workerId` until now + leaseMs, counting the attempt. */
  claim(workerId: string, leaseMs: number, limit: number): Promise<QueuedMail[]> {
    return this.store.write(async (tx) => {
      const now = this.clock();
      const due = this.dueFilter(now)
        .orderBy('next_attempt_at')
        .limit(limit)
        .$if(this.store.lockRows, (q) => q.forUpdate().skipLocked());
      const rows = await tx.all(
        this.store.db
          .updateTable('mail_outbox')
          .set({ claimed_by: workerId, claimed_until: now + leaseMs, attempts: sql<number>`attempts + 1` })
          .where('id', 'in', due)
          .returningAll(),
      );
      return rows.map(toQueued).sort((a, b) => a.createdAt - b.createdAt);
    });
  }

  async markSent(id: string, workerId: string): Promise<void> {
    await this.store.write((tx) =>
      tx.run(
        this.store.db
          .updateTable('mail_outbox')
          // claimed_by stays: which worker sent it.
          .set({ status: 'sent', sent_at: this.clock(), claimed_until: null, last_error: null })
          .where('id', '=', id)
          .where('claimed_by', '=', workerId),
      ),
    );
  }

  /** Releases a failed claim: retried at `retryAt`, or given up for good when it is null. */
  async markFailed(id: string, workerId: string, error: string, retryAt: number | null): Promise<void> {
    await this.store.write((tx) =>
      tx.run(
        this.store.db
          .updateTable('mail_outbox')
          .set({
            status: retryAt === null ? 'failed' : 'pending',
            next_attempt_at: retryAt ?? this.clock(),
            claimed_by: null,
            claimed_until: null,
            last_error: error.slice(0, 1000),
          })
          .where('id', '=', id)
          .where('claimed_by', '=', workerId),
      ),
    );
  }

  /** Sent messages are kept for a while (operators can look), then dropped. */
  purgeSent(before: number): Promise<number> {
    return this.store.write((tx) =>
      tx.run(this.store.db.deleteFrom('mail_outbox').where('status', '=', 'sent').where('sent_at', '<', before)),
    );
  }
}

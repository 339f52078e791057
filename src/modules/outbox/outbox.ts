import { sql } from 'kysely';
import { timeOrderedId } from '../../core/ids.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import type { OutboxTable } from '../../storage/schema.ts';
import { Prepared } from '../../storage/prepared.ts';
import { executorOf } from '../../storage/unit-of-work.ts';

/** A claimed job: what a consumer gets. */
export interface Job<P = unknown> {
  id: string;
  kind: string;
  payload: P;
  /** Attempts so far, this one included. */
  attempts: number;
  createdAt: number;
  /** The worker holding the claim. */
  claimedBy: string;
}

const toJob = (r: OutboxTable): Job => ({ id: r.id, kind: r.kind, payload: JSON.parse(r.payload), attempts: r.attempts, createdAt: r.created_at, claimedBy: r.claimed_by ?? '' });

/**
 * The general, durable outbox. A job is inserted in the same unit of work as the change that
 * causes it, so it exists exactly when that change committed. Workers claim due jobs of the
 * kinds they handle with a lease (`claimed_until`): on PostgreSQL with FOR UPDATE SKIP LOCKED,
 * so several processes never take the same row; a claim left by a crashed worker expires and
 * the job is retried. A job that keeps failing ends `dead`, kept for operators to look at.
 */
type EnqueueParams = { id: string; kind: string; payload: string; at: number; account: string | null; target: string | null };

/**
 * Whose a job is: the account (tenant) it serves and, for a webhook delivery, the endpoint it goes
 * to. A claim takes no more jobs of one account, or of one target, than its cap allows in flight.
 */
export interface JobOwner {
  accountId: string;
  target?: string;
}

/**
 * At most this many jobs in flight (claimed, their lease live) per account and per target, counted
 * in the table: across every worker on the store, not per process.
 */
export interface ClaimCaps {
  perAccount: number;
  perTarget: number;
}

/** No cap: what a claim without caps counts against. */
const UNCAPPED: ClaimCaps = { perAccount: 2 ** 31 - 1, perTarget: 2 ** 31 - 1 };
/**
 * How many due jobs, oldest first, a claim weighs at most (groups at their cap already left out):
 * the ranking per account and per target works on this many rows, whatever the backlog.
 */
const SCAN_PER_CLAIMED = 2;
const SCAN_MIN = 64;

type Params = Record<string, string | number>;

/** The parameters every statement on due jobs takes: the time and the kinds (k0..). */
function kindParams(kinds: readonly string[], now: number): Params {
  const params: Params = { now };
  kinds.forEach((kind, i) => {
    params[`k${i}`] = kind;
  });
  return params;
}

export class Outbox {
  private readonly listeners = new Set<(kind: string) => void>();
  /** Queued in the unit of every change that has a consumer (webhooks): built once. */
  private readonly insertJob: Prepared<EnqueueParams, never>;
  private readonly completeJob: Prepared<{ id: string; worker: string; at: number }, never>;
  /** Compiled once per worker's kinds (the due read) and kinds and leases (the claim): see dueJobs. */
  private readonly dueReads = new Map<string, Prepared<Params, { id: string }>>();
  private readonly claims = new Map<string, { own: readonly string[]; statement: Prepared<Params, OutboxTable> }>();

  constructor(
    private readonly store: Store,
    private readonly clock: () => number = Date.now,
  ) {
    this.insertJob = new Prepared<EnqueueParams, never>((p) =>
      store.db.insertInto('outbox').values({
        id: p('id'),
        kind: p('kind'),
        payload: p('payload'),
        status: sql.lit('pending'),
        attempts: sql.lit(0),
        next_attempt_at: p('at'),
        claimed_by: sql`NULL`,
        claimed_until: sql`NULL`,
        last_error: sql`NULL`,
        created_at: p('at'),
        done_at: sql`NULL`,
        account_id: p('account'),
        target: p('target'),
      }),
    );
    this.completeJob = new Prepared<{ id: string; worker: string; at: number }, never>((p) =>
      store.db
        .updateTable('outbox')
        .set({ status: sql.lit('done'), done_at: p('at'), claimed_until: sql`NULL`, last_error: sql`NULL` })
        .where('id', '=', p('id'))
        .where('claimed_by', '=', p('worker')),
    );
  }

  /**
   * Queues a job inside `unit`; returns its id. The id sorts by time, so a new job's primary-key
   * entry lands on the key's last page, which every job of a batch shares, where a random id would
   * dirty a page of its own in a table that keeps its done jobs for days.
   */
  async enqueue(unit: Unit, kind: string, payload: unknown, owner?: JobOwner): Promise<string> {
    const at = this.clock();
    const id = timeOrderedId(at);
    await executorOf(unit).run(this.insertJob.bind({ id, kind, payload: JSON.stringify(payload), at, account: owner?.accountId ?? null, target: owner?.target ?? null }));
    // A hint for this process's worker; other processes find the row on their next poll.
    setTimeout(() => this.listeners.forEach((listener) => listener(kind)), 0);
    return id;
  }

  /** `listener` hears the kind of every job this process queues (a worker wakes for its own kinds only). */
  onQueued(listener: (kind: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Due jobs of `kinds`, for the due read and the claim. Both are built and compiled once per
   * worker's kinds (and leases): a worker asks with the same ones every time, and compiling the
   * claim with Kysely cost more than running it. Kinds and leases are parameters (k0.., o0.., l0..),
   * so the SQL text is one per shape.
   */
  private dueJobs(kinds: readonly string[], p: (name: string) => never) {
    return this.store.db
      .selectFrom('outbox')
      .select('id')
      .where('status', '=', sql.lit('pending'))
      .where('next_attempt_at', '<=', p('now'))
      .where('kind', 'in', kinds.map((_, i) => p(`k${i}`)))
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', p('now'))]));
  }

  /** A cheap read first, so an idle worker never opens a write transaction. */
  async hasDue(kinds: readonly string[], now = this.clock()): Promise<boolean> {
    const shape = kinds.join('\u0000');
    let read = this.dueReads.get(shape);
    if (!read) {
      read = new Prepared<Params, { id: string }>((p) => this.dueJobs(kinds, p as never).limit(sql.lit(1)));
      this.dueReads.set(shape, read);
    }
    return (await this.store.read.first(read.bind(kindParams(kinds, now)))) !== undefined;
  }

  /**
   * The due jobs a claim takes, oldest first, fairly: no more of one account or one target than its
   * cap minus what it has in flight (claimed, lease live: the partial index of claimed rows), and
   * none of a group already at its cap, so one tenant's backlog (a flood, hung endpoints) never
   * fills the worker while another tenant's job waits behind it. The ranking weighs the oldest
   * `scan` due jobs of the groups below their caps: the cost of a claim does not grow with the backlog.
   */
  // In flight: a claim whose lease is live. Only claimed rows have claimed_until (done and failed jobs
  // clear it), so the partial index outbox_claimed_idx holds exactly them: counting them needs no
  // `status`, whose index would make the planner walk every pending job.
  private fairDueJobs(kinds: readonly string[], p: (name: string) => unknown) {
    const now = p('now');
    const kindList = sql.join(kinds.map((_, i) => p(`k${i}`)));
    return sql<string>`(WITH busy_accounts AS (
        SELECT account_id, count(*) AS n FROM outbox
        WHERE claimed_until >= ${now} AND account_id IS NOT NULL GROUP BY account_id
      ), busy_targets AS (
        SELECT target, count(*) AS n FROM outbox
        WHERE claimed_until >= ${now} AND target IS NOT NULL GROUP BY target
      ), due AS (
        SELECT id, next_attempt_at, account_id, target FROM outbox
        WHERE status = 'pending' AND next_attempt_at <= ${now} AND kind IN (${kindList})
          AND (claimed_until IS NULL OR claimed_until < ${now})
          AND (account_id IS NULL OR account_id NOT IN (SELECT account_id FROM busy_accounts WHERE n >= ${p('perAccount')}))
          AND (target IS NULL OR target NOT IN (SELECT target FROM busy_targets WHERE n >= ${p('perTarget')}))
        ORDER BY next_attempt_at LIMIT ${p('scan')}
      ), ranked AS (
        SELECT due.id, due.next_attempt_at, due.account_id, due.target,
          row_number() OVER (PARTITION BY due.account_id ORDER BY due.next_attempt_at, due.id) + COALESCE(busy_accounts.n, 0) AS account_load,
          row_number() OVER (PARTITION BY due.target ORDER BY due.next_attempt_at, due.id) + COALESCE(busy_targets.n, 0) AS target_load
        FROM due
        LEFT JOIN busy_accounts ON busy_accounts.account_id = due.account_id
        LEFT JOIN busy_targets ON busy_targets.target = due.target
      )
      SELECT id FROM ranked
      WHERE (account_id IS NULL OR account_load <= ${p('perAccount')}) AND (target IS NULL OR target_load <= ${p('perTarget')})
      ORDER BY next_attempt_at LIMIT ${p('limit')})`;
  }

  private claimStatement(kinds: readonly string[], leaseByKind: Readonly<Record<string, number>>) {
    const own = Object.keys(leaseByKind);
    const shape = `${kinds.join('\u0000')}|${own.join('\u0000')}`;
    let claim = this.claims.get(shape);
    if (claim) return claim;
    const statement = new Prepared<Params, OutboxTable>((p) => {
      const fair = this.fairDueJobs(kinds, p);
      // PostgreSQL: the rows are locked (SKIP LOCKED: several processes never take the same job) by a
      // select that states the due conditions again, so a row another process claimed meanwhile is
      // checked on its newest version and left alone.
      const candidates = this.store.lockRows
        ? this.store.db
            .selectFrom('outbox')
            .select('id')
            .where('id', 'in', fair)
            .where('status', '=', sql.lit('pending'))
            .where('next_attempt_at', '<=', p('now') as never)
            .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', p('now') as never)]))
            .forUpdate()
            .skipLocked()
        : fair;
      return this.store.db
        .updateTable('outbox')
        .set((eb) => {
          const lease = (name: string) => eb.cast<number>(eb.val(p(name) as never), 'bigint');
          return {
            claimed_by: p('worker') as never,
            // A CASE of parameters is cast, as PostgreSQL would take a CASE of untyped parameters for text.
            claimed_until:
              own.length === 0
                ? lease('until')
                : own.reduce((c, _, i) => c.when('kind', '=', p(`o${i}`) as never).then(lease(`l${i}`)), eb.case() as any).else(lease('until')).end(),
            attempts: sql<number>`attempts + 1`,
          };
        })
        .where('id', 'in', candidates as never)
        .returningAll();
    });
    claim = { own, statement };
    this.claims.set(shape, claim);
    return claim;
  }

  /**
   * Takes up to `limit` due jobs of `kinds` for `workerId` until now + leaseMs (or the kind's own
   * lease in `leaseByKind`: a webhook is over in seconds, an SMTP send may take minutes), counting
   * the attempt; within `caps` per account and per target (fairDueJobs).
   */
  claim(workerId: string, kinds: readonly string[], leaseMs: number, limit: number, leaseByKind: Readonly<Record<string, number>> = {}, caps: ClaimCaps = UNCAPPED): Promise<Job[]> {
    const claim = this.claimStatement(kinds, leaseByKind);
    return this.store.write(async (tx) => {
      const now = this.clock();
      const params = kindParams(kinds, now);
      claim.own.forEach((kind, i) => {
        params[`o${i}`] = kind;
        params[`l${i}`] = now + leaseByKind[kind]!;
      });
      Object.assign(params, { worker: workerId, until: now + leaseMs, limit, scan: Math.max(SCAN_MIN, limit * SCAN_PER_CLAIMED), perAccount: caps.perAccount, perTarget: caps.perTarget });
      const rows = await tx.all(claim.statement.bind(params));
      return rows.map(toJob).sort((a, b) => a.createdAt - b.createdAt);
    });
  }

  /**
   * Marks a claimed job done; claimed_by stays: which worker did it. In `unit` when given: a
   * consumer that records its outcome in a unit completes the job with it (one write, not two).
   */
  async complete(id: string, workerId: string, unit?: Unit): Promise<void> {
    const statement = this.completeJob.bind({ id, worker: workerId, at: this.clock() });
    if (unit) await executorOf(unit).run(statement);
    else await this.store.write((tx) => tx.run(statement));
  }

  /** Marks claimed jobs done in one write: a worker's completions share it, not a write each. */
  async completeAll(ids: readonly string[], workerId: string): Promise<void> {
    const done = this.store.db
      .updateTable('outbox')
      .set({ status: 'done', done_at: this.clock(), claimed_until: null, last_error: null })
      .where('id', 'in', ids)
      .where('claimed_by', '=', workerId);
    await this.store.write((tx) => tx.run(done));
  }

  /** Releases a failed claim: retried at `retryAt`, or dead for good when it is null. */
  async fail(id: string, workerId: string, error: string, retryAt: number | null): Promise<void> {
    await this.store.write((tx) =>
      tx.run(
        this.store.db
          .updateTable('outbox')
          .set({
            status: retryAt === null ? 'dead' : 'pending',
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

  /**
   * Releases every claim still held: those jobs are due again at once (the attempt they were on stays
   * counted). Only for a start that knows every earlier worker is gone: on SQLite the DATA_DIR lock,
   * which the kernel frees only when its holder dies, proves it (main.ts). A crashed worker's jobs
   * would otherwise wait out their leases (5 minutes for e-mail).
   */
  releaseClaims(): Promise<number> {
    return this.store.write((tx) =>
      tx.run(this.store.db.updateTable('outbox').set({ claimed_by: null, claimed_until: null }).where('status', '=', 'pending').where('claimed_until', 'is not', null)),
    );
  }

  /** Done jobs (of `kinds`: each worker purges its own) are kept for a while (operators can look), then dropped. */
  purgeDone(before: number, kinds: readonly string[]): Promise<number> {
    return this.store.write((tx) => tx.run(this.store.db.deleteFrom('outbox').where('status', '=', 'done').where('done_at', '<', before).where('kind', 'in', kinds)));
  }

  /** How many jobs of `kind` wait (pending: a first attempt or a retry), and when the oldest was queued. */
  async pending(kind: string): Promise<{ count: number; oldestCreatedAt: number | null }> {
    const row = await this.store.read.first(
      this.store.db
        .selectFrom('outbox')
        .select((eb) => [eb.fn.countAll<number | string>().as('count'), eb.fn.min<number | string | null>('created_at').as('oldest')])
        .where('status', '=', 'pending')
        .where('kind', '=', kind),
    );
    return { count: Number(row?.count ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
  }

  /** Jobs not done yet, by kind and state (pending or dead): the backlog operators watch. */
  async backlog(): Promise<{ kind: string; status: string; count: number }[]> {
    const { db } = this.store;
    const rows = await this.store.read.all(
      db.selectFrom('outbox').select(['kind', 'status', (eb) => eb.fn.countAll<number | string>().as('count')]).where('status', '<>', 'done').groupBy(['kind', 'status']),
    );
    return rows.map((r) => ({ kind: r.kind, status: r.status, count: Number(r.count) }));
  }
}

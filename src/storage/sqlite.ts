import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest } from './migrations/index.ts';
import type { Database } from './schema.ts';
import { type Executor, type Statement, type Store, toSqlQuery, UnitMisuseError, type WriteOptions } from './store.ts';
import { Checkpointer } from './sqlite-checkpointer.ts';
import { SearchIndexer } from './sqlite-search-index.ts';
import { openSqlite, type SqliteConnection, type SqliteStatement } from './sqlite-binding.ts';
import { WalSync } from './wal-sync.ts';
import { SQLITE_LOWER } from './like.ts';
import { type Cacheable, StatementCache, type StatementCacheStats } from './statement-cache.ts';

const STATEMENT_CACHE_LIMIT = 500;

/** How often, while batches commit, the worker copies the WAL into the database file. */
const CHECKPOINT_EVERY_MS = 1000;
/**
 * WAL frames (4 KiB pages) past which the next batch waits for a checkpoint to the WAL's end: under
 * sustained writes the worker's checkpoints never catch up with it, and SQLite starts the WAL over
 * from its beginning only once all of it is in the database file (256 MiB). Each such wait pauses
 * writes for tens of milliseconds, which sets the activation p99: a larger bound makes them rarer
 * (docs/decisions/sqlite-wal-sync.md, "The bound").
 */
const WAL_LIMIT_FRAMES = 65_536;

export interface SqliteOptions {
  mmapBytes?: number;
  /** For tests: checkpoint timing (CHECKPOINT_EVERY_MS, WAL_LIMIT_FRAMES). */
  checkpointEveryMs?: number;
  walLimitFrames?: number;
  /** For tests: the checkpointer's worker shares the event loop's core (default: the process may use one CPU only). */
  sharedCore?: boolean;
}

/**
 * Reads through a memory map of the database file, up to this size: a lookup then reads the
 * B-tree pages where the OS caches them instead of copying each into SQLite's own cache with a
 * read(2), which keeps large tables (a million licenses) nearly as fast as small ones. Those pages
 * are file-backed memory (the OS's cache, which it may drop), not the process's own.
 */
export const SQLITE_MMAP_DEFAULT = 1024 * 1024 * 1024;

const STALL_MESSAGE =
  'a unit of work on SQLite awaited something other than its own statements: a read through the store ' +
  '(it waits for the batch this unit belongs to), another service call that opens its own unit instead of ' +
  'joining this one, network or file I/O, or a timer. Do that before opening the unit, or pass the unit on.';

/**
 * A prepared statement. Readers return raw arrays that `row` turns into objects: the bindings
 * build each row object property by property in C++, which costs more than the query itself
 * on the hot paths.
 */
interface CachedStatement extends Cacheable {
  stmt: SqliteStatement;
  row: ((values: unknown[]) => unknown) | null;
  /** Writes nothing: may run in the shared read transaction. */
  readonly: boolean;
}

/**
 * A row builder for one statement's columns, generated once (as ajv and fast-json-stringify do)
 * so every row is an object literal of one shape. Column names come from our own SQL and are
 * quoted with JSON.stringify.
 */
function rowBuilder(columns: string[]): (values: unknown[]) => unknown {
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`);
  return new Function('v', `return { ${fields.join(', ')} };`) as (values: unknown[]) => unknown;
}

interface Job {
  work: (tx: Executor) => Promise<unknown>;
  /** Answered after the batch's sync (false: once committed, WriteOptions). */
  awaitSync: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: boolean; value: unknown };

/**
 * A batch unit's executor: runs inside the batch's transaction while its unit is open, never after.
 * It also carries the unit's outcome (`settled`), so running a unit costs one object and one promise.
 */
class UnitExecutor implements Executor {
  open = true;
  readonly settled: Promise<Outcome>;
  private settle!: (outcome: Outcome) => void;

  constructor(private readonly store: SqliteStore) {
    this.settled = new Promise<Outcome>((resolve) => (this.settle = resolve));
  }

  /** Ends the unit with its outcome; once ended (failed for stalling), what its work does later is dropped. */
  end(ok: boolean, value: unknown): void {
    if (!this.open) return;
    this.open = false;
    this.settle({ ok, value });
  }

  readonly succeeded = (value: unknown): void => this.end(true, value);
  readonly failed = (value: unknown): void => this.end(false, value);

  private guard(): void {
    if (!this.open) throw new UnitMisuseError('a statement ran after its unit of work had ended (the unit had been failed for awaiting something else)');
  }

  async all<R>(query: Statement<R>): Promise<R[]> {
    this.guard();
    return this.store.runAll(query);
  }

  async first<R>(query: Statement<R>): Promise<R | undefined> {
    this.guard();
    return this.store.runFirst(query);
  }

  async run(query: Statement<unknown>): Promise<number> {
    this.guard();
    return this.store.runWrite(query);
  }
}

/**
 * The embedded store: one SQLite connection (sqlite-binding.ts) in WAL mode, and an acknowledged write survives
 * power loss. Writes are group-committed: every unit of work queued while the previous batch and
 * its fsync ran is executed in one transaction (a savepoint each, so one failing unit rolls back
 * alone) and made durable by an fsync before any of them is answered. The fsync runs off the main
 * thread (WalSync, docs/decisions/sqlite-wal-sync.md): requests and reads go on meanwhile, and reads
 * may see a batch's rows between its commit and its fsync (rows that a power loss in that window
 * would take away). Checkpoints run on a worker thread too (Checkpointer, same document).
 */
export class SqliteStore implements Store {
  readonly dialect = 'sqlite' as const;
  readonly lockRows = false;
  readonly db: Kysely<Database>;
  readonly read: Executor;
  private readonly conn: SqliteConnection;
  /** Set once open: commits are then synced by it (synchronous=NORMAL); before that, by SQLite (FULL). */
  private sync: WalSync | undefined;
  /** Set once open: checkpoints run on its worker (wal_autocheckpoint=0); before that, SQLite's own. */
  private checkpointer: Checkpointer | undefined;
  /** Set once open: adds new rows to the license search's FTS5 index in batches. */
  searchIndex: SearchIndexer | undefined;
  private lastCheckpointAt = Number.NEGATIVE_INFINITY;
  /** Frames in the WAL when the last checkpoint ran: how far the WAL reaches, copied or not. */
  private walFrames = 0;
  /** Checkpoints made (all on the worker): periodic ones, and those a batch waited for (checkpointToEnd). */
  readonly checkpoints = { periodic: 0, toEnd: 0 };
  private readonly statements = new StatementCache<CachedStatement>(STATEMENT_CACHE_LIMIT);
  private queue: Job[] = [];
  private flushing = false;
  private closed = false;
  /** A read transaction is open, shared by every read of this event-loop turn. */
  private reading = false;
  /** A write batch's transaction is open: reads from outside it wait for its end. */
  private batchOpen = false;
  private afterBatch: (() => void)[] = [];
  /** The unit of the batch that is running, if one is: the stall watch fails it. */
  private runningUnit: UnitExecutor | undefined;
  private stallWatch: NodeJS.Immediate | undefined;
  /** Transaction control, prepared once: `exec` would parse the text again for every unit and turn. */
  private readonly tx: Record<'beginWrite' | 'beginRead' | 'savepoint' | 'rollbackTo' | 'release' | 'commit' | 'rollback', SqliteStatement>;

  private constructor(
    private readonly file: string,
    mmapBytes: number,
    private readonly checkpointEveryMs: number,
    private readonly walLimitFrames: number,
  ) {
    this.conn = openSqlite(file);
    this.conn.pragma('journal_mode = WAL');
    this.conn.pragma('synchronous = FULL');
    this.conn.pragma('foreign_keys = ON');
    this.conn.pragma('busy_timeout = 5000');
    // 16 MiB page cache: the OS caches the file anyway; measured with a million licenses, a
    // 64 MiB cache answered no faster and kept the server 50 MB larger (docs/benchmarks.md).
    this.conn.pragma('cache_size = -16384');
    this.conn.pragma('temp_store = MEMORY');
    this.conn.pragma(`mmap_size = ${Math.floor(mmapBytes)}`);
    // Until open() hands checkpoints to the worker (migrations): every 4,000 WAL pages (16 MiB)
    // instead of SQLite's 1,000, so a page that several batches dirtied is copied once per checkpoint.
    this.conn.pragma('wal_autocheckpoint = 4000');
    // Unicode lower case for the license search's row test (like.ts): in queries only, never in a
    // trigger or an index, so the file stays writable by any SQLite without it.
    this.conn.function(SQLITE_LOWER, { deterministic: true }, (value) => (typeof value === 'string' ? value.toLowerCase() : value));
    this.db = new Kysely<Database>({ dialect: new SqliteDialect({ database: this.conn }) });
    this.read = this.outsideExecutor();
    const control = (sql: string) => this.conn.prepare(sql);
    this.tx = {
      beginWrite: control('BEGIN IMMEDIATE'),
      beginRead: control('BEGIN'),
      savepoint: control('SAVEPOINT unit'),
      rollbackTo: control('ROLLBACK TO unit'),
      release: control('RELEASE unit'),
      commit: control('COMMIT'),
      rollback: control('ROLLBACK'),
    };
  }

  static async open(dataDir: string, options: SqliteOptions = {}): Promise<SqliteStore> {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const store = new SqliteStore(
      join(dataDir, 'tessera.db'),
      options.mmapBytes ?? SQLITE_MMAP_DEFAULT,
      options.checkpointEveryMs ?? CHECKPOINT_EVERY_MS,
      options.walLimitFrames ?? WAL_LIMIT_FRAMES,
    );
    await migrateToLatest(store.db);
    store.syncOffThread(options.sharedCore);
    store.searchIndex = new SearchIndexer(store);
    store.searchIndex.start();
    return store;
  }

  /**
   * From here on SQLite commits without syncing, and WalSync makes each batch durable before it is
   * answered; and the WAL is copied into the database file on the checkpointer's worker.
   */
  private syncOffThread(sharedCore: boolean | undefined): void {
    this.sync = new WalSync(`${this.file}-wal`);
    this.conn.pragma('synchronous = NORMAL');
    this.checkpointer = new Checkpointer(this.file, { sharedCore });
    this.conn.pragma('wal_autocheckpoint = 0');
  }

  /** After a batch's commit: a checkpoint on the worker, at most every checkpointEveryMs. */
  private checkpointSometimes(): void {
    const checkpointer = this.checkpointer;
    if (!checkpointer || checkpointer.running) return;
    const now = performance.now();
    if (now - this.lastCheckpointAt < this.checkpointEveryMs) return;
    this.lastCheckpointAt = now;
    checkpointer.run().then(
      (result) => {
        this.checkpoints.periodic++;
        this.walFrames = result.log;
      },
      () => {
        // The WAL keeps every frame whatever failed (an I/O error): the next one tries again.
      },
    );
  }

  /**
   * Once the WAL has passed walLimitFrames, the next batch waits for a checkpoint that starts after
   * the last commit: with no commit meanwhile it copies the WAL to its end, and the batch then starts
   * it over. Writes pause for that checkpoint (tens of milliseconds, about every 3 s under sustained
   * writes at the default limit); reads go on.
   */
  private async checkpointToEnd(): Promise<void> {
    const checkpointer = this.checkpointer!;
    await checkpointer.idle(true);
    try {
      const result = await checkpointer.run(true);
      this.checkpoints.toEnd++;
      this.walFrames = result.log === result.checkpointed ? 0 : result.log;
    } catch {
      // As above; the batch goes ahead (writes are never held up by a failing checkpoint).
    }
  }

  write<T>(work: (tx: Executor) => Promise<T>, options?: WriteOptions): Promise<T> {
    if (this.closed) return Promise.reject(new Error('Store is closed'));
    if (this.sync?.failure) return Promise.reject(this.sync.failure);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, awaitSync: options?.awaitSync ?? true, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushing) {
        this.flushing = true;
        this.scheduleFlush();
      }
    });
  }

  /**
   * Runs the queued units as one batch on the next turn, or, while a sync is in flight, once it
   * has completed: a batch committed during a sync could not be answered before the next sync
   * anyway (but for `awaitSync: false` units, which then wait one sync more), so waiting for it puts
   * every unit queued meanwhile into one batch and one COMMIT
   * (fewer, larger batches: a batch's fixed cost and the WAL frames of the pages its units share
   * are paid once for all of them).
   */
  private scheduleFlush(): void {
    const waits: Promise<void>[] = [];
    if (this.sync?.busy) waits.push(this.sync.drained());
    if (this.checkpointer && this.walFrames >= this.walLimitFrames) waits.push(this.checkpointToEnd());
    const next = () => setImmediate(() => void this.flush());
    if (waits.length === 0) next();
    else void Promise.all(waits).then(next);
  }

  private async flush(): Promise<void> {
    this.endRead();
    const jobs = this.queue;
    this.queue = [];
    const outcomes: Outcome[] = [];
    if (this.sync?.failure) {
      for (const job of jobs) job.reject(this.sync.failure);
      return this.afterFlush();
    }
    try {
      this.tx.beginWrite.run();
      this.batchOpen = true;
      this.watchStall();
      for (const job of jobs) {
        this.tx.savepoint.run();
        const outcome = await this.runUnit(job);
        if (!outcome.ok) this.tx.rollbackTo.run();
        this.tx.release.run();
        outcomes.push(outcome);
      }
      this.tx.commit.run();
    } catch (error) {
      if (this.conn.inTransaction) this.tx.rollback.run();
      this.endBatch();
      for (const job of jobs) job.reject(error);
      return this.afterFlush();
    }
    this.endBatch();
    this.checkpointSometimes();
    // Failed units wait too: what failed them may have been read from a commit not yet durable.
    const answer = (awaitSync: boolean, syncError?: Error) =>
      jobs.forEach((job, i) => {
        if (job.awaitSync !== awaitSync) return;
        const outcome = outcomes[i]!;
        if (syncError) job.reject(syncError);
        else if (outcome.ok) job.resolve(outcome.value);
        else job.reject(outcome.value);
      });
    answer(false);
    // The batch is synced even when no unit waits for it: "soon after" (WriteOptions) holds.
    if (this.sync) this.sync.after((error) => answer(true, error));
    else answer(true);
    this.afterFlush();
  }

  /**
   * Runs one unit of the batch. Its statements are synchronous, so a batch of units that await
   * only them settles within one event-loop turn. A unit still pending at the next turn awaits
   * something else (a read through the store, which waits for this very batch; another unit; I/O;
   * a timer): it would stall every read and write of the process, so it fails at once instead, and
   * its executor is closed so nothing it does later runs outside the batch's transaction. One
   * timer per batch watches for that (`watchStall`), so a well-behaved unit pays no timer.
   */
  private runUnit(job: Job): Promise<Outcome> {
    const unit = new UnitExecutor(this);
    this.runningUnit = unit;
    try {
      job.work(unit).then(unit.succeeded, unit.failed);
    } catch (value) {
      unit.end(false, value);
    }
    return unit.settled;
  }

  /** Fires on the turn after a batch began: a unit still running then has stalled (see runUnit). */
  private watchStall(): void {
    this.stallWatch = setImmediate(() => {
      this.stallWatch = undefined;
      this.runningUnit?.end(false, new UnitMisuseError(STALL_MESSAGE));
      if (this.batchOpen) this.watchStall(); // the rest of the batch runs on later turns now
    });
  }

  /** Lets the reads that arrived during the batch run, now that it is committed or rolled back. */
  private endBatch(): void {
    this.batchOpen = false;
    this.runningUnit = undefined;
    clearImmediate(this.stallWatch);
    this.stallWatch = undefined;
    const waiting = this.afterBatch;
    this.afterBatch = [];
    for (const resume of waiting) resume();
  }

  /**
   * A read from outside the batch that arrives while the batch runs (in the microtask gaps between
   * its statements) waits for the batch's end rather than run inside its transaction: it would see
   * rows that a unit's savepoint, or the whole batch, may still roll back.
   */
  private batchEnd(): Promise<void> {
    return new Promise((resolve) => this.afterBatch.push(resolve));
  }

  private afterFlush(): void {
    if (this.queue.length > 0) this.scheduleFlush();
    else this.flushing = false;
  }

  private statement(sql: string): CachedStatement {
    return this.statements.get(sql, this.prepare);
  }

  private readonly prepare = (sql: string): CachedStatement => {
    const stmt = this.conn.prepare(sql);
    const row = stmt.reader ? rowBuilder(stmt.columns().map((c) => c.name)) : null;
    return { stmt: row ? stmt.raw(true) : stmt, row, readonly: stmt.readonly, used: false };
  };

  /**
   * Reads outside a write share one read transaction per event-loop turn, ended in the check
   * phase: each statement then skips taking and releasing SQLite's file locks. A write batch
   * ends it first, so writes never run inside it and readers see every committed write.
   */
  private beginRead(): void {
    if (this.reading || this.conn.inTransaction) return; // inside a write batch: its transaction
    this.tx.beginRead.run();
    this.reading = true;
    setImmediate(this.endRead);
  }

  private readonly endRead = (): void => {
    if (!this.reading) return;
    this.reading = false;
    this.tx.commit.run();
  };

  // SQLite's bindings are synchronous; executors wrap results so repositories are store-agnostic.
  // Not part of Store: for this store's own executors (the read executor and UnitExecutor).
  runAll<R>(query: Statement<R>): R[] {
    const { sql, parameters } = toSqlQuery(query);
    const { stmt, row, readonly } = this.ready(sql);
    // An array's items are the positional parameters (SqliteStatement).
    const rows = row ? ((stmt.all(parameters) as unknown[][]).map(row) as R[]) : [];
    if (!row) stmt.run(parameters);
    if (!readonly) this.syncAutocommit();
    return rows;
  }

  /** The first row only: a read steps its statement once and builds no array of rows. */
  runFirst<R>(query: Statement<R>): R | undefined {
    const { sql, parameters } = toSqlQuery(query);
    const { stmt, row, readonly } = this.ready(sql);
    if (!row || !readonly) return this.runAll(query)[0]; // a write runs whole, as runAll runs it
    const values = stmt.get(parameters) as unknown[] | undefined;
    return values === undefined ? undefined : (row(values) as R);
  }

  /** The statement of `sql`, with the read transaction begun for a reader (a write outside `write`, or a RETURNING, commits on its own, as it always did). */
  private ready(sql: string): CachedStatement {
    const cached = this.statement(sql);
    if (cached.readonly) this.beginRead();
    else this.endRead();
    return cached;
  }

  runWrite(query: Statement<unknown>): number {
    const { sql, parameters } = toSqlQuery(query);
    this.endRead();
    const changes = this.statement(sql).stmt.run(...parameters).changes;
    this.syncAutocommit();
    return changes;
  }

  /** A write outside a batch committed on its own: made durable before it returns, as a batch's are. */
  private syncAutocommit(): void {
    if (this.sync && !this.conn.inTransaction) this.sync.now();
  }

  /** The store's `read`: waits while a batch runs, so it sees committed rows only. */
  private outsideExecutor(): Executor {
    return {
      all: async (query) => {
        if (this.batchOpen) await this.batchEnd();
        return this.runAll(query);
      },
      first: async (query) => {
        if (this.batchOpen) await this.batchEnd();
        return this.runFirst(query);
      },
      run: async (query) => {
        if (this.batchOpen) await this.batchEnd();
        return this.runWrite(query);
      },
    };
  }

  stats(): Record<string, number> {
    return { queued_units: this.queue.length };
  }

  statementCache(): StatementCacheStats {
    return this.statements.stats();
  }

  async ping(): Promise<void> {
    if (this.sync?.failure) throw this.sync.failure;
    this.conn.prepare('select 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.searchIndex?.stop();
    this.closed = true;
    while (this.flushing) await new Promise((r) => setImmediate(r));
    await this.sync?.drained();
    await this.checkpointer?.close();
    this.endRead();
    this.conn.close();
    this.sync?.close();
  }
}

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest } from './migrations/index.ts';
import type { Database } from './schema.ts';
import { type Executor, type Statement, type Store, toSqlQuery } from './store.ts';

const STATEMENT_CACHE_LIMIT = 500;

/**
 * A prepared statement. Readers return raw arrays that `row` turns into objects: better-sqlite3
 * builds each row object property by property in C++, which costs more than the query itself
 * on the hot paths.
 */
interface CachedStatement {
  stmt: BetterSqlite3.Statement;
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
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * The embedded store: one better-sqlite3 connection in WAL mode with synchronous=FULL, so an
 * acknowledged write survives power loss. Writes are group-committed: every unit of work queued
 * while the previous batch ran is executed in one transaction (a savepoint each, so one failing
 * unit rolls back alone) and made durable by a single fsync before any of them is answered.
 */
export class SqliteStore implements Store {
  readonly dialect = 'sqlite' as const;
  readonly lockRows = false;
  readonly db: Kysely<Database>;
  readonly read: Executor;
  private readonly conn: BetterSqlite3.Database;
  private readonly statements = new Map<string, CachedStatement>();
  private queue: Job[] = [];
  private flushing = false;
  private closed = false;
  /** A read transaction is open, shared by every read of this event-loop turn. */
  private reading = false;
  /** A write batch's transaction is open: reads from outside it wait for its end. */
  private batchOpen = false;
  private afterBatch: (() => void)[] = [];
  /** What a batch's units run on: inside the batch's transaction, never waiting for it. */
  private readonly unit: Executor;

  private constructor(file: string) {
    this.conn = new BetterSqlite3(file);
    this.conn.pragma('journal_mode = WAL');
    this.conn.pragma('synchronous = FULL');
    this.conn.pragma('foreign_keys = ON');
    this.conn.pragma('busy_timeout = 5000');
    // 16 MiB page cache: the OS caches the file anyway; measured with a million licenses, a
    // 64 MiB cache answered no faster and kept the server 50 MB larger (docs/benchmarks.md).
    this.conn.pragma('cache_size = -16384');
    this.conn.pragma('temp_store = MEMORY');
    this.db = new Kysely<Database>({ dialect: new SqliteDialect({ database: this.conn }) });
    this.read = this.executor(true);
    this.unit = this.executor(false);
  }

  static async open(dataDir: string): Promise<SqliteStore> {
    mkdirSync(dataDir, { recursive: true });
    const store = new SqliteStore(join(dataDir, 'tessera.db'));
    await migrateToLatest(store.db);
    return store;
  }

  write<T>(work: (tx: Executor) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('Store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.endRead();
    const jobs = this.queue;
    this.queue = [];
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      this.conn.exec('BEGIN IMMEDIATE');
      this.batchOpen = true;
      for (const job of jobs) {
        this.conn.exec('SAVEPOINT unit');
        try {
          outcomes.push({ ok: true, value: await job.work(this.unit) });
          this.conn.exec('RELEASE unit');
        } catch (error) {
          this.conn.exec('ROLLBACK TO unit');
          this.conn.exec('RELEASE unit');
          outcomes.push({ ok: false, value: error });
        }
      }
      this.conn.exec('COMMIT');
    } catch (error) {
      if (this.conn.inTransaction) this.conn.exec('ROLLBACK');
      this.endBatch();
      for (const job of jobs) job.reject(error);
      return this.afterFlush();
    }
    this.endBatch();
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    });
    this.afterFlush();
  }

  /** Lets the reads that arrived during the batch run, now that it is committed or rolled back. */
  private endBatch(): void {
    this.batchOpen = false;
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
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.flushing = false;
  }

  private statement(sql: string): CachedStatement {
    let cached = this.statements.get(sql);
    if (!cached) {
      if (this.statements.size >= STATEMENT_CACHE_LIMIT) this.statements.clear();
      const stmt = this.conn.prepare(sql);
      const row = stmt.reader ? rowBuilder(stmt.columns().map((c) => c.name)) : null;
      cached = { stmt: row ? stmt.raw(true) : stmt, row, readonly: stmt.readonly };
      this.statements.set(sql, cached);
    }
    return cached;
  }

  /**
   * Reads outside a write share one read transaction per event-loop turn, ended in the check
   * phase: each statement then skips taking and releasing SQLite's file locks. A write batch
   * ends it first, so writes never run inside it and readers see every committed write.
   */
  private beginRead(): void {
    if (this.reading || this.conn.inTransaction) return; // inside a write batch: its transaction
    this.conn.exec('BEGIN');
    this.reading = true;
    setImmediate(this.endRead);
  }

  private readonly endRead = (): void => {
    if (!this.reading) return;
    this.reading = false;
    this.conn.exec('COMMIT');
  };

  /** `outside`: the store's `read`, which waits while a batch runs; otherwise a batch's unit executor. */
  private executor(outside: boolean): Executor {
    // better-sqlite3 is synchronous; results are wrapped so repositories are store-agnostic.
    const all = <R>(query: Statement<R>): R[] => {
      const { sql, parameters } = toSqlQuery(query);
      const { stmt, row, readonly } = this.statement(sql);
      // A write outside `write` (or a RETURNING) commits on its own, as it always did.
      if (readonly) this.beginRead();
      else this.endRead();
      if (row) return (stmt.all(...parameters) as unknown[][]).map(row) as R[];
      stmt.run(...parameters);
      return [];
    };
    const run = (query: Statement<unknown>): number => {
      const { sql, parameters } = toSqlQuery(query);
      this.endRead();
      return this.statement(sql).stmt.run(...parameters).changes;
    };
    if (!outside) {
      return { all: async (query) => all(query), first: async (query) => all(query)[0], run: async (query) => run(query) };
    }
    return {
      all: async (query) => {
        if (this.batchOpen) await this.batchEnd();
        return all(query);
      },
      first: async (query) => {
        if (this.batchOpen) await this.batchEnd();
        return all(query)[0];
      },
      run: async (query) => {
        if (this.batchOpen) await this.batchEnd();
        return run(query);
      },
    };
  }

  async ping(): Promise<void> {
    this.conn.prepare('select 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.flushing) await new Promise((r) => setImmediate(r));
    this.endRead();
    this.conn.close();
  }
}

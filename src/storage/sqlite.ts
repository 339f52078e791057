import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest } from './migrations/index.ts';
import type { Database } from './schema.ts';
import { type Executor, type Statement, type Store, toSqlQuery } from './store.ts';

const STATEMENT_CACHE_LIMIT = 500;

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
  private readonly statements = new Map<string, BetterSqlite3.Statement>();
  private queue: Job[] = [];
  private flushing = false;
  private closed = false;

  private constructor(file: string) {
    this.conn = new BetterSqlite3(file);
    this.conn.pragma('journal_mode = WAL');
    this.conn.pragma('synchronous = FULL');
    this.conn.pragma('foreign_keys = ON');
    this.conn.pragma('busy_timeout = 5000');
    this.conn.pragma('cache_size = -65536'); // 64 MiB page cache
    this.conn.pragma('temp_store = MEMORY');
    this.db = new Kysely<Database>({ dialect: new SqliteDialect({ database: this.conn }) });
    this.read = this.executor();
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
    const jobs = this.queue;
    this.queue = [];
    const outcomes: { ok: boolean; value: unknown }[] = [];
    const tx = this.read;
    try {
      this.conn.exec('BEGIN IMMEDIATE');
      for (const job of jobs) {
        this.conn.exec('SAVEPOINT unit');
        try {
          outcomes.push({ ok: true, value: await job.work(tx) });
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
      for (const job of jobs) job.reject(error);
      return this.afterFlush();
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    });
    this.afterFlush();
  }

  private afterFlush(): void {
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.flushing = false;
  }

  private statement(sql: string): BetterSqlite3.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      if (this.statements.size >= STATEMENT_CACHE_LIMIT) this.statements.clear();
      stmt = this.conn.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private executor(): Executor {
    // better-sqlite3 is synchronous; results are wrapped so repositories are store-agnostic.
    const all = <R>(query: Statement<R>): R[] => {
      const { sql, parameters } = toSqlQuery(query);
      const stmt = this.statement(sql);
      if (stmt.reader) return stmt.all(...parameters) as R[];
      stmt.run(...parameters);
      return [];
    };
    return {
      all: async (query) => all(query),
      first: async (query) => all(query)[0],
      run: async (query) => {
        const { sql, parameters } = toSqlQuery(query);
        return this.statement(sql).run(...parameters).changes;
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
    this.conn.close();
  }
}

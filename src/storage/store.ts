import type { Compilable, Kysely } from 'kysely';
import type { ChangeFeed } from './change-feed.ts';
import type { Database } from './schema.ts';
import type { StatementCacheStats } from './statement-cache.ts';

/** A statement ready to run: SQL with positional parameters in the store's dialect. */
export interface SqlQuery {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  /** Set on hot-path statements: PostgreSQL prepares them once per connection under this name. */
  readonly name?: string;
}

/** A bound hot-path statement that remembers its row type. */
export interface BoundQuery<R> extends SqlQuery {
  readonly __row?: R;
}

/** Anything Kysely can compile (a select, insert, update or delete builder), or a bound statement. */
export type Statement<R> = Compilable<R> | BoundQuery<R>;

/** Runs statements; inside `Store.write` every call belongs to one atomic unit of work. */
export interface Executor {
  all<R>(query: Statement<R>): Promise<R[]>;
  first<R>(query: Statement<R>): Promise<R | undefined>;
  /** Runs a write and returns the number of rows it changed. */
  run(query: Statement<unknown>): Promise<number>;
}

export interface WriteOptions {
  /**
   * false: answered once committed, without waiting for its sync to disk, which the store makes
   * soon after anyway (SQLite's next WAL sync; PostgreSQL's WAL writer, `synchronous_commit=off`).
   * Survives the server process's death, not a power loss or database crash in the few
   * milliseconds before that sync. Only for rows whose loss then is harmless (idempotency claims
   * and stored answers: docs/decisions/operations.md, "Idempotency-Key"). Default true.
   */
  awaitSync?: boolean;
}

/**
 * The storage layer's one interface. `db` only builds SQL (and runs migrations); statements are
 * executed through `read` or inside `write`, so both stores share every repository.
 */
export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly db: Kysely<Database>;
  readonly read: Executor;
  /**
   * Runs `work` atomically and durably. On SQLite concurrent units share one transaction and
   * one fsync (group commit), each in its own savepoint; `work` must await nothing but its
   * executor: a unit still pending after its event-loop turn fails with UnitMisuseError.
   * On PostgreSQL each unit is its own transaction. `read` sees committed rows only, on both.
   */
  write<T>(work: (tx: Executor) => Promise<T>, options?: WriteOptions): Promise<T>;
  /** Row locks for read-check-write units: `FOR UPDATE` on PostgreSQL; SQLite's writer is exclusive anyway. */
  readonly lockRows: boolean;
  ping(): Promise<void>;
  /** Connection-pool figures for metrics: PostgreSQL total/idle/waiting, SQLite units queued for the next batch. */
  stats(): Record<string, number>;
  /** PostgreSQL only: which licenses changed, whichever process changed them (change-feed.ts). */
  readonly changes?: ChangeFeed;
  /** SQLite only: its prepared-statement cache, for metrics. */
  statementCache?(): StatementCacheStats;
  close(): Promise<void>;
}

/** A unit of work used in a way that would hang or corrupt the store; the message names the cause. */
export class UnitMisuseError extends Error {
  constructor(cause: string) {
    super(`Unit of work misuse: ${cause}`);
    this.name = 'UnitMisuseError';
  }
}

export function toSqlQuery(query: Statement<unknown>): SqlQuery {
  return 'compile' in query ? query.compile() : query;
}

import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from './migrations/index.ts';
import { PostgresChangeFeed } from './postgres-change-feed.ts';
import type { Database } from './schema.ts';
import { type Executor, type Statement, type Store, toSqlQuery, type WriteOptions } from './store.ts';

// bigint columns hold epoch milliseconds and counts: well inside Number's exact range.
const types = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (value: string) => Number.parseInt(value, 10) : pg.types.getTypeParser(oid, format as 'text'),
};

const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock
const MAX_ATTEMPTS = 3;

function executorFor(client: pg.Pool | pg.PoolClient): Executor {
  const query = async <R>(statement: Statement<R>) => {
    const { sql, parameters, name } = toSqlQuery(statement);
    return client.query({ text: sql, values: parameters as unknown[], name });
  };
  return {
    all: async (statement) => (await query(statement)).rows,
    first: async (statement) => (await query(statement)).rows[0],
    run: async (statement) => (await query(statement)).rowCount ?? 0,
  };
}

/** The scale-out store: several stateless server processes share one PostgreSQL database. */
export class PostgresStore implements Store {
  readonly dialect = 'postgres' as const;
  readonly lockRows = true;
  readonly db: Kysely<Database>;
  readonly read: Executor;
  /** What other processes (and this one) changed: for caches of license rows (change-feed.ts). */
  readonly changes: PostgresChangeFeed;
  private readonly pool: pg.Pool;

  private constructor(connectionString: string, poolSize: number) {
    this.changes = new PostgresChangeFeed(connectionString);
    // No JIT compilation and no parallel workers on the service's connections. Its statements are
    // short; JIT starts on any the planner costs high (a search's walk, a count) and spends 20-30 ms
    // compiling what runs in less, and a parallel plan's workers made a search by a full address
    // take 64 ms instead of 15 at 1,000,000 licenses (docs/decisions/license-search.md). Sent as
    // the connection's first statement (startup `options` are refused by PgBouncer), and awaited
    // before the pool hands the connection out: a query sent while another runs on the same
    // client is deprecated in pg 8 and refused by pg 9. A server without the settings still serves.
    const onConnect = async (client: pg.ClientBase) => {
      await client.query('SET jit = off; SET max_parallel_workers_per_gather = 0').catch(() => {});
    };
    // Pipelined connections (pg's `pipeline`): a query is sent without waiting for the one before
    // it to be answered, which lets a unit's BEGIN go out with its first statement (write, below).
    this.pool = new pg.Pool({ connectionString, max: poolSize, types, onConnect, pipeline: true });
    // An idle client that loses its connection must not crash the process.
    this.pool.on('error', () => {});
    this.db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: this.pool }) });
    this.read = executorFor(this.pool);
  }

  static async open(connectionString: string, poolSize = 10): Promise<PostgresStore> {
    const store = new PostgresStore(connectionString, poolSize);
    await migrateToLatest(store.db);
    return store;
  }

  async write<T>(work: (tx: Executor) => Promise<T>, options?: WriteOptions): Promise<T> {
    const begin = options?.awaitSync === false ? 'BEGIN; SET LOCAL synchronous_commit TO OFF' : 'BEGIN';
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let discard = false;
      try {
        // Not awaited before the unit's first statement: both go out together, a round trip fewer
        // per unit (activations: 6-14 % more a second). BEGIN fails only with its connection, and
        // then so does everything sent behind it, so no statement runs outside the transaction.
        const began = client.query(begin);
        began.catch(() => {}); // awaited below; a failure is the unit's, never an unhandled rejection
        const result = await work(executorFor(client));
        await began;
        await client.query('COMMIT');
        // This process's caches hear of what the unit changed before anyone is answered (at once
        // when nothing listens: the feed connects for its first listener).
        await this.changes.fence();
        return result;
      } catch (error) {
        // A connection whose ROLLBACK failed may still hold this unit's transaction open: it is
        // closed, never handed to the next unit, whose COMMIT would commit this one's writes.
        discard = !(await client.query('ROLLBACK').then(() => true, () => false));
        const code = (error as { code?: string }).code;
        if (!(code && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS)) throw error;
      } finally {
        client.release(discard);
      }
    }
  }

  async ping(): Promise<void> {
    await this.pool.query('select 1');
  }

  stats(): Record<string, number> {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  async close(): Promise<void> {
    await this.changes.close();
    await this.db.destroy(); // ends the pool
  }
}

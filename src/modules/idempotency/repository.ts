import { sql } from 'kysely';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { Prepared } from '../../storage/prepared.ts';
import type { Executor } from '../../storage/store.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import { answerColumns, FOUND_COLUMNS, type Found, keyRow, type Params, type RowParams, rowParams } from './rows.ts';
import type { IdempotencyRepository, KeyRow, SharedKeys } from './service.ts';
import { SqliteKeys } from './sqlite-keys.ts';

const NULL = sql<null>`null`;

/** The keys on `store`: in memory over an append-only table when one process owns it (SQLite), claim rows when processes share it. */
export function idempotencyRepository(store: Store): IdempotencyRepository {
  return store.dialect === 'sqlite' ? new SqliteKeys(store) : new SharedKeyRows(store);
}

/** On every keyed request: built once, bound per call (no query building per request). */
function statements(store: Store) {
  const { db } = store;
  const row = (p: <K extends 'account' | 'key'>(name: K) => string) => ({ account_id: p('account'), idem_key: p('key') });
  return {
    insert: new Prepared<Params, never>((p) =>
      db
        .insertInto('idempotency_keys')
        .values({ ...row(p), request_hash: p('hash'), locked_until: p('lockedUntil'), expires_at: p('expiresAt') })
        .onConflict((oc) => oc.columns(['account_id', 'idem_key']).doNothing()),
    ),
    // An expired key, or a claim whose holder died (still in flight past its lease), is taken over.
    takeOver: new Prepared<Params & { now: number }, never>((p) =>
      db
        .updateTable('idempotency_keys')
        // Literal nulls: a prepared statement's parameters are all named.
        .set({ request_hash: p('hash'), response_status: NULL, response_type: NULL, response_body: NULL, locked_until: p('lockedUntil'), expires_at: p('expiresAt') })
        .where('account_id', '=', p('account'))
        .where('idem_key', '=', p('key'))
        .where((eb) => eb.or([eb('expires_at', '<=', p('now')), eb.and([eb('response_status', 'is', null), eb('locked_until', '<=', p('now'))])])),
    ),
    find: new Prepared<{ account: string; key: string }, Found>((p) =>
      db
        .selectFrom('idempotency_keys')
        .select(FOUND_COLUMNS)
        .where('account_id', '=', p('account'))
        .where('idem_key', '=', p('key')),
    ),
    put: new Prepared<RowParams, never>((p) =>
      db
        .insertInto('idempotency_keys')
        .values({ ...row(p), ...answerColumns(p) })
        .onConflict((oc) =>
          oc.columns(['account_id', 'idem_key']).doUpdateSet((eb) => ({
            request_hash: eb.ref('excluded.request_hash'),
            response_status: eb.ref('excluded.response_status'),
            response_type: eb.ref('excluded.response_type'),
            response_body: eb.ref('excluded.response_body'),
            locked_until: eb.ref('excluded.locked_until'),
            expires_at: eb.ref('excluded.expires_at'),
          })),
        ),
    ),
    release: new Prepared<{ account: string; key: string }, never>((p) =>
      db.deleteFrom('idempotency_keys').where('account_id', '=', p('account')).where('idem_key', '=', p('key')).where('response_status', 'is', null),
    ),
  };
}

/**
 * PostgreSQL: a row per key, keyed by `(account_id, idem_key)`; a claim is that row, inserted before
 * the request runs, so every process sees it at once.
 */
export class SharedKeyRows implements SharedKeys {
  readonly shared = true;
  private readonly q: ReturnType<typeof statements>;

  constructor(private readonly store: Store) {
    this.q = statements(store);
  }

  async insert(tx: Executor, r: KeyRow): Promise<boolean> {
    return (await tx.run(this.q.insert.bind(rowParams(r)))) === 1;
  }

  async takeOver(tx: Executor, r: KeyRow, now: number): Promise<boolean> {
    return (await tx.run(this.q.takeOver.bind({ ...rowParams(r), now }))) === 1;
  }

  find(accountId: string, key: string): Promise<KeyRow | undefined> {
    return this.findOn(this.store.read, accountId, key);
  }

  findIn(tx: Executor, accountId: string, key: string): Promise<KeyRow | undefined> {
    return this.findOn(tx, accountId, key);
  }

  private async findOn(on: Executor, accountId: string, key: string): Promise<KeyRow | undefined> {
    const row = await on.first(this.q.find.bind({ account: accountId, key }));
    return row && keyRow(accountId, key, row);
  }

  private async put(tx: Executor, r: KeyRow): Promise<void> {
    await tx.run(this.q.put.bind(rowParams(r)));
  }

  putIn(unit: Unit, r: KeyRow): Promise<void> {
    return this.put(executorOf(unit), r);
  }

  save(r: KeyRow): Promise<void> {
    return this.store.write((tx) => this.put(tx, r), { awaitSync: false });
  }

  async release(tx: Executor, accountId: string, key: string): Promise<void> {
    await tx.run(this.q.release.bind({ account: accountId, key }));
  }

  async purgeExpired(now: number, limit: number): Promise<number> {
    const { db } = this.store;
    // Bounded batches (neither store has a portable DELETE ... LIMIT): the oldest `limit` keys.
    const batch = db
      .selectFrom('idempotency_keys')
      .select(['account_id', 'idem_key'])
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .$asTuple('account_id', 'idem_key');
    return this.store.write((tx) => tx.run(db.deleteFrom('idempotency_keys').where((eb) => eb(eb.refTuple('account_id', 'idem_key'), 'in', batch))));
  }
}

import { sql } from 'kysely';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { Prepared } from '../../storage/prepared.ts';
import type { Executor } from '../../storage/store.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { IdempotencyRepository, KeyRow } from './service.ts';

const NULL = sql<null>`null`;

type Params = { account: string; key: string; hash: string; lockedUntil: number; expiresAt: number };
type Found = { request_hash: string; response_status: number | null; response_type: string | null; response_body: string | null; locked_until: number; expires_at: number };

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
        .select(['request_hash', 'response_status', 'response_type', 'response_body', 'locked_until', 'expires_at'])
        .where('account_id', '=', p('account'))
        .where('idem_key', '=', p('key')),
    ),
    put: new Prepared<Params & { status: number | null; type: string | null; body: string | null }, never>((p) =>
      db
        .insertInto('idempotency_keys')
        .values({
          ...row(p),
          request_hash: p('hash'),
          response_status: p('status'),
          response_type: p('type'),
          response_body: p('body'),
          locked_until: p('lockedUntil'),
          expires_at: p('expiresAt'),
        })
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

const params = (r: KeyRow): Params => ({ account: r.accountId, key: r.key, hash: r.hash, lockedUntil: r.lockedUntil, expiresAt: r.expiresAt });

export class SqlIdempotencyRepository implements IdempotencyRepository {
  readonly singleProcess: boolean;
  private readonly q: ReturnType<typeof statements>;

  constructor(private readonly store: Store) {
    this.q = statements(store);
    this.singleProcess = store.dialect === 'sqlite';
  }

  async insert(tx: Executor, r: KeyRow): Promise<boolean> {
    return (await tx.run(this.q.insert.bind(params(r)))) === 1;
  }

  async takeOver(tx: Executor, r: KeyRow, now: number): Promise<boolean> {
    return (await tx.run(this.q.takeOver.bind({ ...params(r), now }))) === 1;
  }

  async find(tx: Executor | undefined, accountId: string, key: string): Promise<KeyRow | undefined> {
    const row = await (tx ?? this.store.read).first(this.q.find.bind({ account: accountId, key }));
    if (!row) return undefined;
    return {
      accountId,
      key,
      hash: row.request_hash,
      response: row.response_status === null ? null : { status: row.response_status, contentType: row.response_type, body: row.response_body ?? '' },
      lockedUntil: Number(row.locked_until),
      expiresAt: Number(row.expires_at),
    };
  }

  async put(tx: Executor, r: KeyRow): Promise<void> {
    const { response } = r;
    await tx.run(this.q.put.bind({ ...params(r), status: response?.status ?? null, type: response?.contentType ?? null, body: response?.body ?? null }));
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

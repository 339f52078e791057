import { sql } from 'kysely';
import type { Store } from '../../storage/index.ts';
import { Prepared } from '../../storage/prepared.ts';
import type { Executor } from '../../storage/store.ts';
import type { IdempotencyRepository, StoredResponse } from './service.ts';

const NULL = sql<null>`null`;

type ClaimRow = { accountId: string; key: string; hash: string; lockedUntil: number; expiresAt: number };
type Found = { request_hash: string; response_status: number | null; response_type: string | null; response_body: string | null };

/** On every keyed request: built once, bound per call (no query building per request). */
function statements(store: Store) {
  const { db } = store;
  const row = (p: <K extends 'account' | 'key'>(name: K) => string) => ({ account_id: p('account'), idem_key: p('key') });
  return {
    insert: new Prepared<{ account: string; key: string; hash: string; lockedUntil: number; expiresAt: number }, never>((p) =>
      db
        .insertInto('idempotency_keys')
        .values({ ...row(p), request_hash: p('hash'), locked_until: p('lockedUntil'), expires_at: p('expiresAt') })
        .onConflict((oc) => oc.columns(['account_id', 'idem_key']).doNothing()),
    ),
    // An expired key, or a claim whose holder died (still in flight past its lease), is taken over.
    takeOver: new Prepared<{ account: string; key: string; hash: string; lockedUntil: number; expiresAt: number; now: number }, never>((p) =>
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
        .select(['request_hash', 'response_status', 'response_type', 'response_body'])
        .where('account_id', '=', p('account'))
        .where('idem_key', '=', p('key')),
    ),
    complete: new Prepared<{ account: string; key: string; status: number; type: string | null; body: string }, never>((p) =>
      db
        .updateTable('idempotency_keys')
        .set({ response_status: p('status'), response_type: p('type'), response_body: p('body') })
        .where('account_id', '=', p('account'))
        .where('idem_key', '=', p('key')),
    ),
    release: new Prepared<{ account: string; key: string }, never>((p) =>
      db.deleteFrom('idempotency_keys').where('account_id', '=', p('account')).where('idem_key', '=', p('key')).where('response_status', 'is', null),
    ),
  };
}

export class SqlIdempotencyRepository implements IdempotencyRepository {
  private readonly q: ReturnType<typeof statements>;

  constructor(private readonly store: Store) {
    this.q = statements(store);
  }

  async insert(tx: Executor, r: ClaimRow): Promise<boolean> {
    return (await tx.run(this.q.insert.bind({ account: r.accountId, key: r.key, hash: r.hash, lockedUntil: r.lockedUntil, expiresAt: r.expiresAt }))) === 1;
  }

  async takeOver(tx: Executor, r: ClaimRow, now: number): Promise<boolean> {
    return (await tx.run(this.q.takeOver.bind({ account: r.accountId, key: r.key, hash: r.hash, lockedUntil: r.lockedUntil, expiresAt: r.expiresAt, now }))) === 1;
  }

  async find(tx: Executor, accountId: string, key: string) {
    const row = await tx.first(this.q.find.bind({ account: accountId, key }));
    if (!row) return undefined;
    const response: StoredResponse | null =
      row.response_status === null ? null : { status: row.response_status, contentType: row.response_type, body: row.response_body ?? '' };
    return { hash: row.request_hash, response };
  }

  async complete(accountId: string, key: string, response: StoredResponse): Promise<void> {
    const statement = this.q.complete.bind({ account: accountId, key, status: response.status, type: response.contentType, body: response.body });
    await this.store.write((tx) => tx.run(statement));
  }

  async release(accountId: string, key: string): Promise<void> {
    const statement = this.q.release.bind({ account: accountId, key });
    await this.store.write((tx) => tx.run(statement));
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

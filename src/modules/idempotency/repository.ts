import type { Store } from '../../storage/index.ts';
import type { Executor } from '../../storage/store.ts';
import type { IdempotencyRepository, StoredResponse } from './service.ts';

type ClaimRow = { accountId: string; key: string; hash: string; lockedUntil: number; expiresAt: number };

export class SqlIdempotencyRepository implements IdempotencyRepository {
  constructor(private readonly store: Store) {}

  async insert(tx: Executor, row: ClaimRow): Promise<boolean> {
    const { db } = this.store;
    const inserted = await tx.run(
      db
        .insertInto('idempotency_keys')
        .values({ account_id: row.accountId, idem_key: row.key, request_hash: row.hash, locked_until: row.lockedUntil, expires_at: row.expiresAt })
        .onConflict((oc) => oc.columns(['account_id', 'idem_key']).doNothing()),
    );
    return inserted === 1;
  }

  async takeOver(tx: Executor, row: ClaimRow, now: number): Promise<boolean> {
    const taken = await tx.run(
      this.store.db
        .updateTable('idempotency_keys')
        .set({ request_hash: row.hash, response_status: null, response_type: null, response_body: null, locked_until: row.lockedUntil, expires_at: row.expiresAt })
        .where('account_id', '=', row.accountId)
        .where('idem_key', '=', row.key)
        .where((eb) => eb.or([eb('expires_at', '<=', now), eb.and([eb('response_status', 'is', null), eb('locked_until', '<=', now)])])),
    );
    return taken === 1;
  }

  async find(tx: Executor, accountId: string, key: string) {
    const row = await tx.first(
      this.store.db
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'response_status', 'response_type', 'response_body'])
        .where('account_id', '=', accountId)
        .where('idem_key', '=', key),
    );
    if (!row) return undefined;
    const response: StoredResponse | null =
      row.response_status === null ? null : { status: row.response_status, contentType: row.response_type, body: row.response_body ?? '' };
    return { hash: row.request_hash, response };
  }

  async complete(accountId: string, key: string, response: StoredResponse): Promise<void> {
    await this.store.write((tx) =>
      tx.run(
        this.store.db
          .updateTable('idempotency_keys')
          .set({ response_status: response.status, response_type: response.contentType, response_body: response.body })
          .where('account_id', '=', accountId)
          .where('idem_key', '=', key),
      ),
    );
  }

  async release(accountId: string, key: string): Promise<void> {
    await this.store.write((tx) =>
      tx.run(this.store.db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('idem_key', '=', key).where('response_status', 'is', null)),
    );
  }

  async purgeExpired(now: number, limit: number): Promise<number> {
    const { db } = this.store;
    // Bounded batches (neither store has a portable DELETE ... LIMIT): the oldest `limit` keys.
    const batch = db.selectFrom('idempotency_keys').select(['account_id', 'idem_key']).where('expires_at', '<=', now).orderBy('expires_at').limit(limit).$asTuple('account_id', 'idem_key');
    return this.store.write((tx) => tx.run(db.deleteFrom('idempotency_keys').where((eb) => eb(eb.refTuple('account_id', 'idem_key'), 'in', batch))));
  }
}

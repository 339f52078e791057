import { Prepared } from '../../storage/prepared.ts';
import type { Store } from '../../storage/index.ts';
import type { ApiKeyRow } from '../../storage/schema.ts';
import type { ApiKey, ApiKeyRepository } from './service.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { Unit } from '../../core/unit-of-work.ts';

const toApiKey = (r: ApiKeyRow): ApiKey => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  keyHash: r.key_hash,
  keyPrefix: r.key_prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  revokedAt: r.revoked_at,
  scope: r.scope,
  expiresAt: r.expires_at,
});

export class SqlApiKeyRepository implements ApiKeyRepository {
  private readonly byHash;

  constructor(private readonly store: Store) {
    // Every server-API request authenticates: a prepared statement keeps that lookup cheap.
    this.byHash = new Prepared<{ hash: string }, ApiKeyRow>((p) =>
      store.db.selectFrom('api_keys').selectAll().where('key_hash', '=', p('hash')),
    );
  }

  async insert(unit: Unit, k: ApiKey): Promise<void> {
    await executorOf(unit).run(
        this.store.db.insertInto('api_keys').values({
          id: k.id,
          account_id: k.accountId,
          name: k.name,
          key_hash: k.keyHash,
          key_prefix: k.keyPrefix,
          created_at: k.createdAt,
          last_used_at: k.lastUsedAt,
          revoked_at: k.revokedAt,
          scope: k.scope,
          expires_at: k.expiresAt,
        }),
    );
  }

  async findByHash(hash: string): Promise<ApiKey | undefined> {
    const row = await this.store.read.first(this.byHash.bind({ hash }));
    return row && toApiKey(row);
  }

  async listByAccount(accountId: string): Promise<ApiKey[]> {
    const rows = await this.store.read.all(
      this.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id'),
    );
    return rows.map(toApiKey);
  }

  revoke(unit: Unit, accountId: string, id: string, at: number): Promise<number> {
    return executorOf(unit).run(
      this.store.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('account_id', '=', accountId).where('revoked_at', 'is', null),
    );
  }

  async touch(unit: Unit, id: string, at: number): Promise<void> {
    await executorOf(unit).run(this.store.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id));
  }
}

import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { Prepared } from '../../storage/prepared.ts';
import type { Executor } from '../../storage/store.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import { keyHash } from './key-hash.ts';
import { answerColumns, FOUND_COLUMNS, type Found, keyRow, type RowParams, rowParams } from './rows.ts';
import type { KeyRow, LocalKeys } from './service.ts';

type Hashed = RowParams & { keyHash: number };

/** Built once, bound per call. `id` is the table's rowid, `key_hash` the key's hash (migration 011). */
function statements(store: Store) {
  const { db } = store;
  return {
    byId: new Prepared<{ id: number }, Found & { account_id: string; idem_key: string }>((p) =>
      db
        .selectFrom('idempotency_keys')
        .select(['account_id', 'idem_key', ...FOUND_COLUMNS])
        .where('id', '=', p('id')),
    ),
    // SQLite picks the id (one past the largest): the row goes at the end of the table.
    insert: new Prepared<Hashed, { id: number }>((p) =>
      db
        .insertInto('idempotency_keys')
        .values({ account_id: p('account'), idem_key: p('key'), key_hash: p('keyHash'), ...answerColumns(p) })
        .returning('id'),
    ),
    exists: new Prepared<{ id: number }, { id: number }>((p) => db.selectFrom('idempotency_keys').select('id').where('id', '=', p('id'))),
    // The row of this key only: another key's row may share the hash.
    update: new Prepared<RowParams & { id: number }, never>((p) =>
      db.updateTable('idempotency_keys').set(answerColumns(p)).where('id', '=', p('id')).where('account_id', '=', p('account')).where('idem_key', '=', p('key')),
    ),
  };
}

/** Every row's id and hash, read from the expiry index alone (it covers them; `expires_at >= 0` picks it). */
export const indexQuery = (store: Store) => store.db.selectFrom('idempotency_keys').select(['id', 'key_hash']).where('expires_at', '>=', 0);

/**
 * SQLite: the keys' rows in the order they are written, found through an index in memory.
 *
 * One server process owns a SQLite store (the data directory's lock), so an index in its memory is
 * exact. It maps each key's hash (`keyHash`, stored with the row) to the ids of the rows with that
 * hash: about 30 bytes a key, a small integer for each, loaded from the table's expiry index before
 * the server listens and kept with every write. A keyed request then reads nothing to learn that its
 * key is new, and its row goes at the end of the table instead of at a random place in a B-tree
 * ordered by the key: a page of that index per key, written to the WAL, copied at the next
 * checkpoint, and the most of what a keyed request cost (docs/decisions/operations.md, "Idempotency-Key").
 *
 * The index only narrows where to look: a row counts once it is read and its account and key match,
 * and an update names the key too. So a hash that several keys share costs a read, never a wrong
 * answer, and an id whose unit rolled back (an id is entered when its row is written, before the
 * commit) finds nothing, and is forgotten when next met. The reverse cannot happen: every committed
 * row's id is in the index.
 */
export class SqliteKeys implements LocalKeys {
  readonly shared = false;
  private readonly q: ReturnType<typeof statements>;
  /** key hash → the id of its row, or the ids of the rows sharing the hash. */
  private readonly ids = new Map<number, number | number[]>();
  private loading: Promise<void> | undefined;
  private loaded = false;

  constructor(private readonly store: Store) {
    this.q = statements(store);
  }

  isNew(accountId: string, key: string): boolean {
    return this.loaded && !this.ids.has(keyHash(accountId, key));
  }

  async find(accountId: string, key: string): Promise<KeyRow | undefined> {
    if (!this.loaded) await this.load();
    const hash = keyHash(accountId, key);
    for (const id of this.idsOf(hash)) {
      const row = await this.store.read.first(this.q.byId.bind({ id }));
      if (row === undefined) this.forget(hash, id); // its unit rolled back (reads see committed rows only)
      else if (row.account_id === accountId && row.idem_key === key) return keyRow(accountId, key, row);
    }
    return undefined;
  }

  putIn(unit: Unit, row: KeyRow): Promise<void> {
    return this.put(executorOf(unit), row);
  }

  save(row: KeyRow): Promise<void> {
    return this.store.write((tx) => this.put(tx, row), { awaitSync: false });
  }

  /** Deletes up to `limit` expired keys, oldest first, and their ids. */
  async purgeExpired(now: number, limit: number): Promise<number> {
    if (!this.loaded) await this.load();
    const { db } = this.store;
    const batch = db.selectFrom('idempotency_keys').select('id').where('expires_at', '<=', now).orderBy('expires_at').limit(limit);
    const gone = await this.store.write((tx) => tx.all(db.deleteFrom('idempotency_keys').where('id', 'in', batch).returning(['id', 'key_hash'])));
    for (const row of gone) this.forget(row.key_hash, row.id);
    return gone.length;
  }

  /** The index, from the table (the expiry index covers it): before the server listens, or at the first use. */
  load(): Promise<void> {
    this.loading ??= this.store.read.all(indexQuery(this.store)).then(
      (rows) => {
        for (const row of rows) this.enter(row.key_hash, row.id);
        this.loaded = true;
      },
      (error: unknown) => {
        this.loading = undefined; // the next keyed request tries again
        throw error;
      },
    );
    return this.loading;
  }

  /** Writes the key's row: over its own row when it has one, else a new one at the end. */
  private async put(tx: Executor, r: KeyRow): Promise<void> {
    const hash = keyHash(r.accountId, r.key);
    const params = rowParams(r);
    for (const id of this.idsOf(hash)) {
      if ((await tx.run(this.q.update.bind({ ...params, id }))) === 1) return;
      // Not this key's row: another key's with the same hash, or none (its unit rolled back), forgotten then.
      if ((await tx.first(this.q.exists.bind({ id }))) === undefined) this.forget(hash, id);
    }
    const inserted = await tx.first(this.q.insert.bind({ ...params, keyHash: hash }));
    this.enter(hash, inserted!.id);
  }

  private idsOf(hash: number): readonly number[] {
    const ids = this.ids.get(hash);
    return ids === undefined ? NONE : typeof ids === 'number' ? [ids] : ids;
  }

  private enter(hash: number, id: number): void {
    const ids = this.ids.get(hash);
    if (ids === undefined) this.ids.set(hash, id);
    else if (typeof ids === 'number') this.ids.set(hash, ids === id ? id : [ids, id]);
    else if (!ids.includes(id)) ids.push(id);
  }

  private forget(hash: number, id: number): void {
    const ids = this.ids.get(hash);
    if (ids === id) this.ids.delete(hash);
    else if (Array.isArray(ids)) {
      const rest = ids.filter((other) => other !== id);
      this.ids.set(hash, rest.length === 1 ? rest[0]! : rest);
    }
  }
}

const NONE: readonly number[] = [];

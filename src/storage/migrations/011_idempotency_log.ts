import { type CreateTableBuilder, type Kysely, SqliteAdapter, sql } from 'kysely';
import { keyHash } from '../../modules/idempotency/key-hash.ts';

const COLUMNS = ['account_id', 'idem_key', 'request_hash', 'response_status', 'response_type', 'response_body', 'locked_until', 'expires_at'] as const;
type KeyRow = Record<(typeof COLUMNS)[number], unknown> & { account_id: string; idem_key: string };
const COPY_BATCH = 500;

/** The columns of migration 008's table. */
function keyColumns<T extends string>(table: CreateTableBuilder<T, never>) {
  return table
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('idem_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_type', 'text')
    .addColumn('response_body', 'text')
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull());
}

/**
 * SQLite only: `idempotency_keys` becomes a table in the order its rows are written (keyed by its
 * rowid, `id`), without the primary key on `(account_id, idem_key)`: the SQLite store finds a key's
 * row through an index it keeps in memory (one process owns the store), by `key_hash`, so a keyed
 * request adds its row at the end of the table instead of a page of a key-ordered index at a random
 * place (docs/decisions/operations.md, "Idempotency-Key"). The index on `(expires_at, key_hash)`
 * serves the purge and, covering, the start-up load of the hashes; both of its ends grow in write
 * order too. PostgreSQL, shared by several processes, keeps the key as the primary key: a claim is that row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  await keyColumns(db.schema.createTable('idempotency_log').addColumn('id', 'integer', (c) => c.primaryKey()))
    .addColumn('key_hash', 'integer', (c) => c.notNull())
    .execute();
  // The hash is computed here, as the store computes it (a day of keys at most: the rest expired).
  const rows = (await db.selectFrom('idempotency_keys').select(COLUMNS).orderBy('expires_at').execute()) as KeyRow[];
  for (let i = 0; i < rows.length; i += COPY_BATCH) {
    await db
      .insertInto('idempotency_log')
      .values(rows.slice(i, i + COPY_BATCH).map((row) => ({ ...row, key_hash: keyHash(row.account_id, row.idem_key) })))
      .execute();
  }
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_log').renameTo('idempotency_keys').execute();
  await db.schema.createIndex('idempotency_keys_expiry_idx').on('idempotency_keys').columns(['expires_at', 'key_hash']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  await keyColumns(db.schema.createTable('idempotency_keyed')).addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'idem_key']).execute();
  // The newest row of a key wins, as in the store's index.
  const columns = sql.raw(COLUMNS.join(', '));
  await sql`insert or replace into idempotency_keyed (${columns}) select ${columns} from idempotency_keys order by id`.execute(db);
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_keyed').renameTo('idempotency_keys').execute();
  await db.schema.createIndex('idempotency_keys_expiry_idx').on('idempotency_keys').column('expires_at').execute();
}

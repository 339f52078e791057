import { type Kysely, SqliteAdapter, sql } from 'kysely';

/**
 * One name for the tenant: every `user_id` column becomes `account_id`, as the code calls it
 * (`accountId`) and as migration 008 already named the idempotency keys' column
 * (docs/decisions/account-id.md). The wire keeps `userId` where it has it; this is storage only.
 *
 * A column rename keeps the rows and rewrites what refers to the column: on SQLite (3.25+) the
 * table's own definition, its foreign key to `accounts` and its indexes; on PostgreSQL the
 * indexes, constraints and triggers, which refer to columns by number (migration 014's triggers
 * name no account column; neither store has a view). Names that said "user" are renamed too: the indexes (PostgreSQL renames in place; SQLite
 * has no ALTER INDEX, so each is dropped and built again under its new name, the one cost of this
 * migration: about 2.4 s per million licenses, measured, docs/decisions/account-id.md) and
 * PostgreSQL's generated names of the foreign keys.
 */

/** Every table with the column, from migrations 001 to 012. */
const TABLES = [
  'api_keys',
  'products',
  'licenses',
  'portal_tokens',
  'payment_connections',
  'price_mappings',
  'purchases',
  'payment_reversals',
  'webhook_endpoints',
  'webhook_deliveries',
  'audit_events',
  'dashboard_sessions',
  'dashboard_password_resets',
  'dashboard_email_changes',
  'activity_daily',
] as const;

/** The tables without a foreign key on it (rows that outlive nothing; audit rows stay after a license's deletion). */
const WITHOUT_FOREIGN_KEY = new Set(['webhook_deliveries', 'audit_events', 'activity_daily']);

/** The indexes named after the user: table, old name, new name, columns after the rename. */
const INDEXES: [table: string, from: string, to: string, columns: string[]][] = [
  ['api_keys', 'api_keys_user_idx', 'api_keys_account_idx', ['account_id']],
  ['products', 'products_user_idx', 'products_account_idx', ['account_id', 'created_at']],
  ['licenses', 'licenses_user_created_idx', 'licenses_account_created_idx', ['account_id', 'created_at', 'key']],
  ['licenses', 'licenses_user_revoked_idx', 'licenses_account_revoked_idx', ['account_id', 'revoked', 'created_at', 'key']],
  ['licenses', 'licenses_user_expiry_idx', 'licenses_account_expiry_idx', ['account_id', 'revoked', 'expires_at', 'key']],
  ['licenses', 'licenses_user_key_idx', 'licenses_account_key_idx', ['account_id', 'key']],
  ['licenses', 'licenses_user_email_idx', 'licenses_account_email_idx', ['account_id', 'email_normalized', 'created_at', 'key']],
  ['dashboard_sessions', 'dashboard_sessions_user_idx', 'dashboard_sessions_account_idx', ['account_id']],
  ['dashboard_password_resets', 'dashboard_password_resets_user_idx', 'dashboard_password_resets_account_idx', ['account_id']],
  ['dashboard_email_changes', 'dashboard_email_changes_user_idx', 'dashboard_email_changes_account_idx', ['account_id']],
  ['activity_daily', 'activity_daily_user_idx', 'activity_daily_account_idx', ['account_id', 'day']],
];

type Names = { column: [string, string]; index: (i: (typeof INDEXES)[number]) => [string, string]; fkey: (table: string) => [string, string] };

const forward: Names = {
  column: ['user_id', 'account_id'],
  index: ([, from, to]) => [from, to],
  fkey: (table) => [`${table}_user_id_fkey`, `${table}_account_id_fkey`],
};

const backward: Names = {
  column: ['account_id', 'user_id'],
  index: ([, from, to]) => [to, from],
  fkey: (table) => [`${table}_account_id_fkey`, `${table}_user_id_fkey`],
};

async function rename(db: Kysely<any>, names: Names): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const [fromColumn, toColumn] = names.column;
  for (const table of TABLES) {
    await db.schema.alterTable(table).renameColumn(fromColumn, toColumn).execute();
    if (!sqlite && !WITHOUT_FOREIGN_KEY.has(table)) {
      const [from, to] = names.fkey(table);
      await sql`alter table ${sql.table(table)} rename constraint ${sql.id(from)} to ${sql.id(to)}`.execute(db);
    }
  }
  for (const index of INDEXES) {
    const [table, , , columns] = index;
    const [from, to] = names.index(index);
    if (sqlite) {
      await db.schema.dropIndex(from).execute();
      await db.schema.createIndex(to).on(table).columns(columns.map((c) => (c === 'account_id' ? toColumn : c))).execute();
    } else {
      await sql`alter index ${sql.id(from)} rename to ${sql.id(to)}`.execute(db);
    }
  }
}

export async function up(db: Kysely<any>): Promise<void> {
  await rename(db, forward);
}

export async function down(db: Kysely<any>): Promise<void> {
  await rename(db, backward);
}

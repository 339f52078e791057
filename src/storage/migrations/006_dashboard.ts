import type { Kysely } from 'kysely';

/**
 * The operator dashboard: its sessions and password-reset links (only SHA-256 hashes of the
 * secrets), the activity counts per product and day, and the indexes the license list needs to
 * answer in a few milliseconds with a million licenses in one account (keyset pages, no OFFSET).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_sessions')
    // `id` is the session's stable, non-secret name (CSRF tokens are bound to it); the cookie holds the secret.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_sessions_user_idx').on('dashboard_sessions').column('user_id').execute();

  await db.schema
    .createTable('dashboard_password_resets')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_password_resets_user_idx').on('dashboard_password_resets').column('user_id').execute();

  await db.schema
    .createTable('activity_daily')
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('activations', 'bigint', (c) => c.notNull())
    .addColumn('validations', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('activity_daily_pk', ['product_id', 'day'])
    .execute();
  await db.schema.createIndex('activity_daily_user_idx').on('activity_daily').columns(['user_id', 'day']).execute();

  // The dashboard's license list: newest first across the account, by status, by key prefix.
  await db.schema.createIndex('licenses_user_created_idx').on('licenses').columns(['user_id', 'created_at', 'key']).execute();
  await db.schema.createIndex('licenses_user_revoked_idx').on('licenses').columns(['user_id', 'revoked', 'created_at', 'key']).execute();
  await db.schema.createIndex('licenses_user_expiry_idx').on('licenses').columns(['user_id', 'revoked', 'expires_at', 'key']).execute();
  await db.schema.createIndex('licenses_user_key_idx').on('licenses').columns(['user_id', 'key']).execute();
  await db.schema.createIndex('licenses_user_email_idx').on('licenses').columns(['user_id', 'email_normalized', 'created_at', 'key']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of ['licenses_user_created_idx', 'licenses_user_revoked_idx', 'licenses_user_expiry_idx', 'licenses_user_key_idx', 'licenses_user_email_idx']) {
    await db.schema.dropIndex(index).execute();
  }
  for (const table of ['activity_daily', 'dashboard_password_resets', 'dashboard_sessions']) await db.schema.dropTable(table).execute();
}

import type { Kysely } from 'kysely';

/**
 * An operator's change of their account's e-mail address waits here until the new address confirms
 * it (a single-use link valid 1 hour; only the SHA-256 hash of the link's secret is stored), like
 * migration 006's password-reset links.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_email_changes')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('new_email', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_email_changes_user_idx').on('dashboard_email_changes').column('user_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('dashboard_email_changes').execute();
}

import type { Kysely } from 'kysely';

/**
 * Account branding and the team's own log (decisions.md, "Operators: teams and security"):
 * - `account_branding`: one row per account that set any (no row: the installation's neutral look).
 *   The logo's bytes live beside it, as product images do (every process on one PostgreSQL serves
 *   them, no shared volume); the account's deletion takes them along.
 * - `member_events`: who invited, changed a role, removed a member, revoked an invitation or switched
 *   the two-factor requirement. Apart from `audit_events`, which is the license log the server API
 *   lists (`GET /api/v1/events`): members are a dashboard-only area, kept out of an API key's reach.
 * - `dashboard_password_resets.member_id`: whose sign-in a reset link is for (an invited member's,
 *   or, null for links from before, the account's own).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('account_branding')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('display_name', 'text')
    .addColumn('accent_color', 'text')
    .addColumn('logo_type', 'text')
    .addColumn('logo_data', 'bytea')
    .addColumn('logo_etag', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('member_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    /** JSON: the actor, as the audit log stores it. */
    .addColumn('actor', 'text', (c) => c.notNull())
    /** JSON: whom it concerns and what changed. */
    .addColumn('changes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('member_events_account_idx').on('member_events').columns(['account_id', 'id']).execute();

  await db.schema.alterTable('dashboard_password_resets').addColumn('member_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('dashboard_password_resets').dropColumn('member_id').execute();
  await db.schema.dropTable('member_events').execute();
  await db.schema.dropTable('account_branding').execute();
}

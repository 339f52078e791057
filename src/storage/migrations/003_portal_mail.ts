import type { Kysely } from 'kysely';

/**
 * E-mail outbox, portal sessions and limits, product images, and the per-product portal
 * device-reset limit. Images live in the database (bytea; SQLite stores the Buffer as a blob)
 * so every server process on one PostgreSQL serves the same bytes with no shared disk.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('reply_to', 'text')
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('text_body', 'text', (c) => c.notNull())
    .addColumn('html_body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('claimed_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  await db.schema.createIndex('mail_outbox_due_idx').on('mail_outbox').columns(['status', 'next_attempt_at']).execute();

  await db.schema
    .createTable('portal_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    // Set for operator-created private sessions: only that account's products are shown.
    .addColumn('user_id', 'text', (c) => c.references('accounts.id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_tokens_expiry_idx').on('portal_tokens').column('expires_at').execute();

  await db.schema
    .createTable('portal_link_requests')
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    .addColumn('requested_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_link_requests_idx').on('portal_link_requests').columns(['email_normalized', 'requested_at']).execute();
  await db.schema.createIndex('portal_link_requests_age_idx').on('portal_link_requests').column('requested_at').execute();

  await db.schema
    .createTable('portal_device_resets')
    .addColumn('license_key', 'text', (c) => c.notNull().references('licenses.key').onDelete('cascade'))
    .addColumn('reset_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_device_resets_idx').on('portal_device_resets').columns(['license_key', 'reset_at']).execute();

  await db.schema
    .createTable('product_images')
    .addColumn('product_id', 'text', (c) => c.primaryKey().references('products.id').onDelete('cascade'))
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('data', 'bytea', (c) => c.notNull())
    .addColumn('etag', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  // SQLite adds one column per ALTER TABLE.
  await db.schema.alterTable('products').addColumn('portal_device_reset_limit', 'integer', (c) => c.notNull().defaultTo(3)).execute();
  await db.schema.alterTable('products').addColumn('portal_device_reset_window_days', 'integer', (c) => c.notNull().defaultTo(30)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('products').dropColumn('portal_device_reset_window_days').execute();
  await db.schema.alterTable('products').dropColumn('portal_device_reset_limit').execute();
  for (const table of ['product_images', 'portal_device_resets', 'portal_link_requests', 'portal_tokens', 'mail_outbox']) {
    await db.schema.dropTable(table).execute();
  }
}

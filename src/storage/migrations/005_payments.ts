import type { Kysely } from 'kysely';

/**
 * Payments: one connection per account and provider (its key and webhook signing secret sealed),
 * price mappings (one product per price and account), purchases (one per provider session: the
 * unique key is what makes concurrent deliveries of one event create one purchase) and the
 * licenses each line item created (the primary key is the per-line-item backstop).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('payment_connections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('webhook_endpoint_id', 'text', (c) => c.notNull())
    .addColumn('api_key_sealed', 'text', (c) => c.notNull())
    .addColumn('webhook_secret_sealed', 'text', (c) => c.notNull())
    .addColumn('connected_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('payment_connections_account_provider', ['user_id', 'provider'])
    .execute();

  await db.schema
    .createTable('price_mappings')
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('price_id', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('max_devices', 'integer', (c) => c.notNull())
    .addColumn('license_type', 'text', (c) => c.notNull())
    .addColumn('offset_days', 'integer')
    .addColumn('fixed_expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('price_mappings_pk', ['user_id', 'provider', 'price_id'])
    .execute();
  await db.schema.createIndex('price_mappings_product_idx').on('price_mappings').columns(['product_id', 'created_at']).execute();

  await db.schema
    .createTable('purchases')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text')
    .addColumn('email', 'text')
    .addColumn('email_normalized', 'text')
    .addColumn('amount_total', 'bigint')
    .addColumn('currency', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('invoice_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('purchases_session_unique', ['user_id', 'provider', 'session_id'])
    .execute();
  await db.schema.createIndex('purchases_page_idx').on('purchases').columns(['user_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('purchases_payment_idx').on('purchases').columns(['user_id', 'provider', 'payment_id']).execute();

  await db.schema
    .createTable('purchase_licenses')
    .addColumn('purchase_id', 'text', (c) => c.notNull().references('purchases.id').onDelete('cascade'))
    .addColumn('line_item_id', 'text', (c) => c.notNull())
    // No foreign key: the purchase keeps the record of what it created after a license is deleted.
    .addColumn('license_key', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('purchase_licenses_pk', ['purchase_id', 'line_item_id'])
    .execute();
  await db.schema.createIndex('purchase_licenses_key_idx').on('purchase_licenses').column('license_key').execute();

  // A refund or dispute that arrived before its purchase was fulfilled (the checkout event still being
  // retried): the purchase is recorded reversed when it comes, and creates no license.
  await db.schema
    .createTable('payment_reversals')
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('payment_reversals_pk', ['user_id', 'provider', 'payment_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('payment_reversals').execute();
  await db.schema.dropTable('purchase_licenses').execute();
  await db.schema.dropTable('purchases').execute();
  await db.schema.dropTable('price_mappings').execute();
  await db.schema.dropTable('payment_connections').execute();
}

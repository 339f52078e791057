import type { Kysely } from 'kysely';

/**
 * A purchase made by a checkout in subscription mode remembers its subscription: fulfilling it later
 * (once its price is mapped) asks the provider for that subscription's items and links the licenses.
 * Offers (renewals and upgrades of one-time licenses), at most one per price and product: a
 * completed checkout of that price for a license of the product applies it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('purchases').addColumn('subscription_id', 'text').execute();
  await db.schema
    .createTable('offers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('price_id', 'text', (c) => c.notNull())
    .addColumn('extend_days', 'integer')
    // An upgrade's target product; deleting it deletes the offer (it could no longer apply).
    .addColumn('target_product_id', 'text', (c) => c.references('products.id').onDelete('cascade'))
    .addColumn('max_devices', 'integer')
    .addColumn('license_type', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('offers_price_unique', ['account_id', 'product_id', 'provider', 'price_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('offers').execute();
  await db.schema.alterTable('purchases').dropColumn('subscription_id').execute();
}

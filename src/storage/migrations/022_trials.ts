import type { Kysely } from 'kysely';

/**
 * Trials (docs/licensing-model.md): a product's trial settings; licenses flagged `trial`; and one row
 * per product and device identifier that ever started a trial. The row outlives its license (no
 * foreign key to it): a trial is one per device, ever, even after its license is deleted.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('products').addColumn('trial_enabled', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  await db.schema.alterTable('products').addColumn('trial_days', 'integer', (c) => c.notNull().defaultTo(14)).execute();
  await db.schema.alterTable('products').addColumn('trial_max_devices', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  await db.schema.alterTable('licenses').addColumn('trial', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  await db.schema
    .createTable('trials')
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('device_identifier', 'text', (c) => c.notNull())
    .addColumn('license_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('trials_pk', ['product_id', 'device_identifier'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('trials').execute();
  await db.schema.alterTable('licenses').dropColumn('trial').execute();
  await db.schema.alterTable('products').dropColumn('trial_max_devices').execute();
  await db.schema.alterTable('products').dropColumn('trial_days').execute();
  await db.schema.alterTable('products').dropColumn('trial_enabled').execute();
}

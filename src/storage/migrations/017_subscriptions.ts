import type { Kysely } from 'kysely';

/**
 * Subscriptions (decisions.md, wave 3): a price mapping's `billing` and `grace_days`, a purchase's
 * `kind`, the provider subscriptions the service follows, the licenses linked to them, and the
 * provider events already applied (idempotency per event id).
 *
 * `provider_subscriptions.version` is bumped by every unit that applies a subscription's state: a
 * unit that finds another version than the one it read before asking the provider retries with a
 * fresh state, so events applied concurrently or out of order never leave an older state behind.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('price_mappings').addColumn('billing', 'text', (c) => c.notNull().defaultTo('one_time')).execute();
  await db.schema.alterTable('price_mappings').addColumn('grace_days', 'integer').execute();
  await db.schema.alterTable('purchases').addColumn('kind', 'text', (c) => c.notNull().defaultTo('new')).execute();

  await db.schema
    .createTable('provider_subscriptions')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('subscription_id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('current_period_end', 'bigint')
    .addColumn('cancel_at_period_end', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('provider_subscriptions_pk', ['account_id', 'provider', 'subscription_id'])
    .execute();

  await db.schema
    .createTable('license_subscriptions')
    .addColumn('license_key', 'text', (c) => c.primaryKey().references('licenses.key').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('subscription_id', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('price_id', 'text', (c) => c.notNull())
    .addColumn('grace_days', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('license_subscriptions_sub_idx').on('license_subscriptions').columns(['account_id', 'provider', 'subscription_id']).execute();

  await db.schema
    .createTable('provider_events')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('provider_events_pk', ['account_id', 'provider', 'event_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('provider_events').execute();
  await db.schema.dropTable('license_subscriptions').execute();
  await db.schema.dropTable('provider_subscriptions').execute();
  await db.schema.alterTable('purchases').dropColumn('kind').execute();
  await db.schema.alterTable('price_mappings').dropColumn('grace_days').execute();
  await db.schema.alterTable('price_mappings').dropColumn('billing').execute();
}

import { type CreateTableBuilder, type Kysely, SqliteAdapter, sql } from 'kysely';

/**
 * On SQLite, tables looked up by a text primary key are clustered on it (WITHOUT ROWID): one
 * B-tree search per lookup instead of two, and a 40% smaller file with a million licenses.
 */
function clustered(db: Kysely<unknown>) {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  return <T extends string, C extends string>(table: CreateTableBuilder<T, C>) => (sqlite ? table.modifyEnd(sql`without rowid`) : table);
}

// Written with Kysely's schema builder so one migration serves SQLite and PostgreSQL.
export async function up(db: Kysely<unknown>): Promise<void> {
  const byPrimaryKey = clustered(db);
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull().defaultTo('free'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_user_idx').on('api_keys').column('user_id').execute();

  await db.schema
    .createTable('products')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('support_email', 'text')
    .addColumn('portal_show', 'boolean', (c) => c.notNull())
    .addColumn('portal_allow_device_reset', 'boolean', (c) => c.notNull())
    .addColumn('has_image', 'boolean', (c) => c.notNull())
    .addColumn('fallback_enabled', 'boolean', (c) => c.notNull())
    .addColumn('purchase_note', 'text')
    .addColumn('action_button_text', 'text')
    .addColumn('action_button_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('products_user_idx').on('products').columns(['user_id', 'created_at']).execute();

  await db.schema
    .createTable('licenses')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('revoked', 'boolean', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('email_normalized', 'text')
    .addColumn('max_devices', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .$call(byPrimaryKey)
    .execute();
  // Listing per product pages by (created_at, key); the portal looks licenses up by address.
  await db.schema.createIndex('licenses_product_idx').on('licenses').columns(['product_id', 'created_at', 'key']).execute();
  await db.schema.createIndex('licenses_email_idx').on('licenses').column('email_normalized').execute();

  await db.schema
    .createTable('devices')
    .addColumn('license_key', 'text', (c) => c.notNull().references('licenses.key').onDelete('cascade'))
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('activation_date', 'bigint', (c) => c.notNull())
    // The primary key is also the backstop against a duplicated device.
    .addPrimaryKeyConstraint('devices_pk', ['license_key', 'identifier'])
    .$call(byPrimaryKey)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['devices', 'licenses', 'products', 'api_keys', 'accounts']) {
    await db.schema.dropTable(table).execute();
  }
}

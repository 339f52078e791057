import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('license_token_configs')
    .addColumn('product_id', 'text', (c) => c.primaryKey().references('products.id').onDelete('cascade'))
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .addColumn('validity_seconds', 'integer', (c) => c.notNull())
    .addColumn('expose_public_key', 'boolean', (c) => c.notNull())
    .addColumn('key_id', 'text')
    .addColumn('public_key_pem', 'text')
    .addColumn('private_key_sealed', 'text')
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('license_token_configs').execute();
}

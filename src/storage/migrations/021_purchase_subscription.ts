import type { Kysely } from 'kysely';

/**
 * A purchase made by a checkout in subscription mode remembers its subscription: fulfilling it later
 * (once its price is mapped) asks the provider for that subscription's items and links the licenses.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('purchases').addColumn('subscription_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('purchases').dropColumn('subscription_id').execute();
}

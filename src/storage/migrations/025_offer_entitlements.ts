import type { Kysely } from 'kysely';

/**
 * An upgrade offer may set the license's entitlements (decisions.md, "Renewals and upgrades"):
 * stored as price mappings store theirs, codes joined by a space. Null: the upgrade leaves the
 * license's entitlements as they are; '' sets none.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('offers').addColumn('entitlements', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('offers').dropColumn('entitlements').execute();
}

import type { Kysely } from 'kysely';

/**
 * API keys take a scope (`full`, `read`, `licenses`; core/access.ts) and an optional expiry
 * (decisions.md, "Operators: teams and security"). Keys from before keep doing everything: `full`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('scope', 'text', (c) => c.notNull().defaultTo('full')).execute();
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('expires_at').execute();
  await db.schema.alterTable('api_keys').dropColumn('scope').execute();
}

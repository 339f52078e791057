import { type Kysely, sql } from 'kysely';

/**
 * Whose a job is, for the outbox's fair claim (docs/decisions/operations.md, "Outbox lanes and
 * fairness"): `account_id` (the tenant) and `target` (the webhook endpoint a delivery goes to), both
 * null for jobs with no owner (e-mail; rows from before). A claim counts the jobs in flight per
 * account and per target (claimed, lease live) and takes no more than each one's cap: the partial
 * index holds only the claimed rows (a few dozen per process; done and waiting jobs have no claim),
 * so counting them costs a few index entries whatever the table's size.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox').addColumn('account_id', 'text').execute();
  await db.schema.alterTable('outbox').addColumn('target', 'text').execute();
  await db.schema.createIndex('outbox_claimed_idx').on('outbox').column('claimed_until').where(sql.ref('claimed_until'), 'is not', null).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_claimed_idx').execute();
  await db.schema.alterTable('outbox').dropColumn('target').execute();
  await db.schema.alterTable('outbox').dropColumn('account_id').execute();
}

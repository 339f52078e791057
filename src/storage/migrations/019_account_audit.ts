import type { Kysely } from 'kysely';

/**
 * The account-wide audit log (the dashboard's log page and overview, `GET /api/v1/events`):
 * - `audit_events (account_id, id)` and `(account_id, type, id)`: a page newest first, with or
 *   without a type, is a walk of one index from its cursor. Entries are appended at the right of
 *   their account's range (ids sort in time order), so a license change pays two appends.
 * - `devices (activation_id)`: the activations active devices hold (migration 013), newest first
 *   across the account. Activation ids are time-ordered too: an activation appends one entry at the
 *   right edge of this index, a page the writes keep in cache (docs/benchmarks.md, "Account-wide audit log").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('audit_events_account_idx').on('audit_events').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('audit_events_account_type_idx').on('audit_events').columns(['account_id', 'type', 'id']).execute();
  await db.schema.createIndex('devices_activation_idx').on('devices').column('activation_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('devices_activation_idx').execute();
  await db.schema.dropIndex('audit_events_account_type_idx').execute();
  await db.schema.dropIndex('audit_events_account_idx').execute();
}

import type { Kysely } from 'kysely';

/**
 * A device's row holds its activation's audit entry while the device is active: the entry's id,
 * who activated it (the actor as JSON) and, once the device has been renamed, the name it had
 * then (docs/decisions/audit-held-entries.md). The audit log reads these entries from here and moves
 * each into `audit_events` in the unit that removes its device. An activation then writes its
 * device's row alone: no row and no per-license index entry in `audit_events`, two pages at
 * random places fewer per activation. Rows from before this migration keep null: their entries
 * are already in `audit_events`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ['activation_id', 'activated_by', 'activated_name']) {
    await db.schema.alterTable('devices').addColumn(column, 'text').execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['activated_name', 'activated_by', 'activation_id']) {
    await db.schema.alterTable('devices').dropColumn(column).execute();
  }
}

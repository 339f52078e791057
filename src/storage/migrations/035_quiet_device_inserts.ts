import { type Kysely, SqliteAdapter, sql } from 'kysely';

/**
 * PostgreSQL: a new device no longer notifies the change feed (migration 014). A cached validation
 * row holds one active device, so a device that was not there has no row to drop, and nothing a
 * validation reads of the license or its other devices changes when one is added. Every activation
 * of a new device notified, and a notifying commit holds PostgreSQL's notification-queue lock from
 * before its commit record to its end, WAL flush included: activations could not share a flush
 * (docs/benchmarks.md, "Issue 32: PostgreSQL's write units", part 2). Deletes still notify, and updates
 * as migration 018 set.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop trigger tessera_devices_changed on devices`.execute(db);
  await sql`create trigger tessera_devices_changed after delete on devices for each row execute function tessera_license_changed()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop trigger tessera_devices_changed on devices`.execute(db);
  await sql`create trigger tessera_devices_changed after insert or delete on devices for each row execute function tessera_license_changed()`.execute(db);
}

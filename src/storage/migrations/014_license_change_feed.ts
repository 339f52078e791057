import { type Kysely, SqliteAdapter, sql } from 'kysely';

/**
 * PostgreSQL: every change a validation reads notifies the channel `tessera_licenses` with the
 * license's key (a license's row, its devices), or `*` when a product's fallback setting changes;
 * PostgreSQL delivers the notifications to every listening process when the transaction commits.
 * Processes cache validation rows and drop what these name (docs/decisions/validation-cache.md).
 * Triggers, not the application, so nothing that writes (another version of the service, the CLI,
 * an operator's psql) can leave a cache stale. SQLite has no cache and needs none.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`
    create function tessera_license_changed() returns trigger language plpgsql as $$
    begin
      if tg_table_name = 'devices' then
        perform pg_notify('tessera_licenses', coalesce(new.license_key, old.license_key));
      elsif tg_table_name = 'licenses' then
        perform pg_notify('tessera_licenses', old.key);
        if tg_op <> 'DELETE' and new.key is distinct from old.key then
          perform pg_notify('tessera_licenses', new.key);
        end if;
      else
        perform pg_notify('tessera_licenses', '*');
      end if;
      return null;
    end $$`.execute(db);
  await sql`create trigger tessera_devices_changed after insert or update or delete on devices for each row execute function tessera_license_changed()`.execute(db);
  // An inserted license has no cached row to drop: updates and deletes only.
  await sql`create trigger tessera_licenses_changed after update or delete on licenses for each row execute function tessera_license_changed()`.execute(db);
  await sql`create trigger tessera_products_fallback_changed after update of fallback_enabled on products for each row when (old.fallback_enabled is distinct from new.fallback_enabled) execute function tessera_license_changed()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop trigger tessera_products_fallback_changed on products`.execute(db);
  await sql`drop trigger tessera_licenses_changed on licenses`.execute(db);
  await sql`drop trigger tessera_devices_changed on devices`.execute(db);
  await sql`drop function tessera_license_changed()`.execute(db);
}

import { type Kysely, SqliteAdapter, sql } from 'kysely';

/**
 * The licensing model (docs/licensing-model.md): entitlements on products (defaults) and licenses,
 * metadata on licenses, floating products with leases, and when a device was last seen.
 *
 * Entitlements are stored as one text of codes joined by a space (a code has no space): the public
 * validation reads them on every request, and splitting a short string costs less than JSON.parse.
 * Metadata is a JSON object; only server views read it.
 *
 * A device's `lease_expires_at` is null on a node-locked product; on a floating one, the end of its
 * lease: the slot counts while it lies ahead. `last_seen_at` is written at most once a minute per
 * device (coalesced in memory) except by heartbeats, which move the lease too.
 *
 * PostgreSQL: the devices trigger of migration 014 notified every update; a write of `last_seen_at`
 * alone changes nothing a validation reads, so updates notify only when another column changes. A
 * product's floating settings are read by validations: changing them notifies `*` (every row drops).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('products').addColumn('default_entitlements', 'text', (c) => c.notNull().defaultTo('')).execute();
  await db.schema.alterTable('products').addColumn('floating_enabled', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  await db.schema.alterTable('products').addColumn('lease_seconds', 'integer', (c) => c.notNull().defaultTo(900)).execute();
  await db.schema.alterTable('licenses').addColumn('entitlements', 'text', (c) => c.notNull().defaultTo('')).execute();
  await db.schema.alterTable('licenses').addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}')).execute();
  await db.schema.alterTable('devices').addColumn('lease_expires_at', 'bigint').execute();
  await db.schema.alterTable('devices').addColumn('last_seen_at', 'bigint').execute();
  await db.schema.alterTable('price_mappings').addColumn('entitlements', 'text').execute();
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop trigger tessera_devices_changed on devices`.execute(db);
  await sql`create trigger tessera_devices_changed after insert or delete on devices for each row execute function tessera_license_changed()`.execute(db);
  await sql`create trigger tessera_devices_updated after update on devices for each row
    when ((old.license_key, old.identifier, old.name, old.activation_date, old.lease_expires_at) is distinct from
          (new.license_key, new.identifier, new.name, new.activation_date, new.lease_expires_at))
    execute function tessera_license_changed()`.execute(db);
  // Validation rows carry the product's floating settings too: a change drops every cached row, as fallback's does.
  await sql`create trigger tessera_products_floating_changed after update of floating_enabled, lease_seconds on products for each row
    when ((old.floating_enabled, old.lease_seconds) is distinct from (new.floating_enabled, new.lease_seconds))
    execute function tessera_license_changed()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    await sql`drop trigger tessera_products_floating_changed on products`.execute(db);
    await sql`drop trigger tessera_devices_updated on devices`.execute(db);
    await sql`drop trigger tessera_devices_changed on devices`.execute(db);
    await sql`create trigger tessera_devices_changed after insert or update or delete on devices for each row execute function tessera_license_changed()`.execute(db);
  }
  await db.schema.alterTable('price_mappings').dropColumn('entitlements').execute();
  await db.schema.alterTable('devices').dropColumn('last_seen_at').execute();
  await db.schema.alterTable('devices').dropColumn('lease_expires_at').execute();
  await db.schema.alterTable('licenses').dropColumn('metadata').execute();
  await db.schema.alterTable('licenses').dropColumn('entitlements').execute();
  await db.schema.alterTable('products').dropColumn('lease_seconds').execute();
  await db.schema.alterTable('products').dropColumn('floating_enabled').execute();
  await db.schema.alterTable('products').dropColumn('default_entitlements').execute();
}

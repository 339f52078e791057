import { type Kysely, SqliteAdapter, sql } from 'kysely';

/** Migration 029's trigram indexes on PostgreSQL. */
const GIN_INDEXES = ['licenses_email_trgm', 'licenses_key_trgm', 'devices_search_trgm'] as const;

/**
 * What the search costs the writes, and the searches (issue 36, docs/decisions/license-search.md).
 *
 * SQLite: migration 029 found a side row by a unique index on (license_key, device), two million
 * random text entries at 1,000,000 licenses; every activation inserted into it at a random page (and
 * wrote that page to the WAL at its commit), which took activation from 113 to ~150 µs. Now a device
 * row holds its side row's id (`search_id`, set by the insert trigger on the device row it has just
 * written), so a device's side row is appended and found by its id; a license's own side row (device
 * '') is found through a partial unique index of the license rows only (licenses are created far
 * less often than devices are activated).
 *
 * PostgreSQL: each trigram GIN index keeps a pending list of new entries (fastupdate) that every
 * search reads in full, up to gin_pending_list_limit (4 MB by default): a search read 13-17 ms per
 * index with 2-3 MB pending at 1,000,000, and a page runs up to six such scans (the page and its
 * count). 1 MB bounds that; inserting without the list (fastupdate off) cost ~770 µs a device
 * against ~135-170 µs with it, so the list stays.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    for (const index of GIN_INDEXES) await sql`ALTER INDEX ${sql.ref(index)} SET (gin_pending_list_limit = 1024)`.execute(db);
    return;
  }
  for (const statement of [
    sql`ALTER TABLE devices ADD COLUMN search_id INTEGER`,
    sql`UPDATE devices SET search_id = (SELECT id FROM license_search s WHERE s.license_key = devices.license_key AND s.device = devices.identifier)`,
    sql`CREATE UNIQUE INDEX license_search_license ON license_search (license_key) WHERE device = ''`,
    sql`DROP INDEX license_search_source`,
    ...['licenses_search_au', 'licenses_search_ad', 'devices_search_ai', 'devices_search_au', 'devices_search_ad'].map((t) => sql`DROP TRIGGER ${sql.ref(t)}`),
    sql`CREATE TRIGGER licenses_search_au AFTER UPDATE OF email_normalized ON licenses BEGIN
      DELETE FROM license_search WHERE license_key = new.key AND device = '';
      INSERT INTO license_search (license_key, device, body) VALUES (new.key, '', coalesce(new.email_normalized, '') || char(10) || new.key); END`,
    // The license's own row; its devices' rows go with them (deleted first, or by the cascade, each firing devices_search_ad).
    sql`CREATE TRIGGER licenses_search_ad AFTER DELETE ON licenses BEGIN DELETE FROM license_search WHERE license_key = old.key AND device = ''; END`,
    // last_insert_rowid(): inside a trigger, the row this trigger just inserted. The device row was
    // just written, so setting search_id rewrites a page already dirty.
    sql`CREATE TRIGGER devices_search_ai AFTER INSERT ON devices BEGIN
      INSERT INTO license_search (license_key, device, body) VALUES (new.license_key, new.identifier, new.identifier || char(10) || new.name);
      UPDATE devices SET search_id = last_insert_rowid() WHERE license_key = new.license_key AND identifier = new.identifier; END`,
    // license_key too: a re-key moves the devices to the new license row before deleting the old one.
    sql`CREATE TRIGGER devices_search_au AFTER UPDATE OF license_key, identifier, name ON devices BEGIN
      DELETE FROM license_search WHERE id = old.search_id;
      INSERT INTO license_search (license_key, device, body) VALUES (new.license_key, new.identifier, new.identifier || char(10) || new.name);
      UPDATE devices SET search_id = last_insert_rowid() WHERE license_key = new.license_key AND identifier = new.identifier; END`,
    sql`CREATE TRIGGER devices_search_ad AFTER DELETE ON devices BEGIN DELETE FROM license_search WHERE id = old.search_id; END`,
  ]) {
    await statement.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    for (const index of GIN_INDEXES) await sql`ALTER INDEX ${sql.ref(index)} RESET (gin_pending_list_limit)`.execute(db);
    return;
  }
  for (const statement of [
    ...['licenses_search_au', 'licenses_search_ad', 'devices_search_ai', 'devices_search_au', 'devices_search_ad'].map((t) => sql`DROP TRIGGER ${sql.ref(t)}`),
    sql`CREATE UNIQUE INDEX license_search_source ON license_search (license_key, device)`,
    sql`DROP INDEX license_search_license`,
    sql`ALTER TABLE devices DROP COLUMN search_id`,
    sql`CREATE TRIGGER licenses_search_au AFTER UPDATE OF email_normalized ON licenses BEGIN
      DELETE FROM license_search WHERE license_key = new.key AND device = '';
      INSERT INTO license_search (license_key, device, body) VALUES (new.key, '', coalesce(new.email_normalized, '') || char(10) || new.key); END`,
    sql`CREATE TRIGGER licenses_search_ad AFTER DELETE ON licenses BEGIN DELETE FROM license_search WHERE license_key = old.key; END`,
    sql`CREATE TRIGGER devices_search_ai AFTER INSERT ON devices BEGIN
      INSERT INTO license_search (license_key, device, body) VALUES (new.license_key, new.identifier, new.identifier || char(10) || new.name); END`,
    sql`CREATE TRIGGER devices_search_au AFTER UPDATE OF license_key, identifier, name ON devices BEGIN
      DELETE FROM license_search WHERE license_key = old.license_key AND device = old.identifier;
      INSERT INTO license_search (license_key, device, body) VALUES (new.license_key, new.identifier, new.identifier || char(10) || new.name); END`,
    sql`CREATE TRIGGER devices_search_ad AFTER DELETE ON devices BEGIN DELETE FROM license_search WHERE license_key = old.license_key AND device = old.identifier; END`,
  ]) {
    await statement.execute(db);
  }
}

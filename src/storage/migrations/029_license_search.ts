import { type Kysely, SqliteAdapter, sql } from 'kysely';

/**
 * Substring search over licenses (issue 36, docs/decisions/license-search.md): a customer's address
 * (a domain like "@acme.com" works), a piece of the key, a device's identifier or name, at 1,000,000
 * licenses without reading them all.
 *
 * PostgreSQL: pg_trgm GIN indexes on the searched columns; `LIKE`/`ILIKE '%x%'` with 3 or more
 * characters is then a bitmap index scan.
 *
 * SQLite: `licenses` and `devices` are WITHOUT ROWID, and FTS5 needs a rowid, so the searched text lives
 * in `license_search` (one row per license: its address and key; one per device: identifier and name),
 * indexed by an external-content FTS5 table with the `trigram` tokenizer (case-insensitive; its index
 * serves `LIKE '%x%'` for 3 or more characters). Triggers keep the side table in step with every
 * write, in the writing transaction, so no code path can forget it; devices removed by a license's
 * cascade fire their own triggers. The FTS5 index follows in batches (sqlite-search-index.ts): FTS5
 * writes an index segment at every commit and savepoint, which made an activation cost ~75 µs more
 * CPU; the search adds the few rows not indexed yet by reading them, so it stays exact.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
    await sql`CREATE INDEX licenses_email_trgm ON licenses USING gin (email_normalized gin_trgm_ops)`.execute(db);
    await sql`CREATE INDEX licenses_key_trgm ON licenses USING gin (key gin_trgm_ops)`.execute(db);
    await sql`CREATE INDEX devices_search_trgm ON devices USING gin (lower(identifier) gin_trgm_ops, lower(name) gin_trgm_ops)`.execute(db);
    return;
  }
  for (const statement of [
    // AUTOINCREMENT: an id is never reused, so a deleted row's entry still in the index (until the
    // indexer takes it out) can never be mistaken for a new row.
    sql`CREATE TABLE license_search (id INTEGER PRIMARY KEY AUTOINCREMENT, license_key TEXT NOT NULL, device TEXT NOT NULL, body TEXT NOT NULL)`,
    sql`CREATE UNIQUE INDEX license_search_source ON license_search (license_key, device)`,
    sql`CREATE VIRTUAL TABLE license_search_fts USING fts5(body, content='license_search', content_rowid='id', tokenize='trigram')`,
    // No merges inside the indexer's inserts (one of a large index holds the writer for hundreds of
    // milliseconds); the indexer does a bounded amount of merge work per batch instead.
    sql`INSERT INTO license_search_fts (license_search_fts, rank) VALUES ('automerge', 0)`,
    // The index holds the rows up to `indexed_through`; the indexer (sqlite-search-index.ts) adds the
    // rest in batches. Rows are never updated (a change is a delete and an insert), so a deleted row's
    // body is the one indexed: its tombstone lets the indexer take it out of the index.
    sql`CREATE TABLE license_search_state (k INTEGER PRIMARY KEY CHECK (k = 0), indexed_through INTEGER NOT NULL)`,
    sql`INSERT INTO license_search_state (k, indexed_through) VALUES (0, 0)`,
    sql`CREATE TABLE license_search_tombstones (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
    sql`CREATE TRIGGER license_search_ad AFTER DELETE ON license_search WHEN old.id <= (SELECT indexed_through FROM license_search_state WHERE k = 0) BEGIN
      INSERT INTO license_search_tombstones (id, body) VALUES (old.id, old.body); END`,
    // A license's row: device '' (no device identifier is empty). Newline-separated so a piece never spans two fields' ends.
    sql`CREATE TRIGGER licenses_search_ai AFTER INSERT ON licenses BEGIN
      INSERT INTO license_search (license_key, device, body) VALUES (new.key, '', coalesce(new.email_normalized, '') || char(10) || new.key); END`,
    sql`CREATE TRIGGER licenses_search_au AFTER UPDATE OF email_normalized ON licenses BEGIN
      DELETE FROM license_search WHERE license_key = new.key AND device = '';
      INSERT INTO license_search (license_key, device, body) VALUES (new.key, '', coalesce(new.email_normalized, '') || char(10) || new.key); END`,
    sql`CREATE TRIGGER licenses_search_ad AFTER DELETE ON licenses BEGIN DELETE FROM license_search WHERE license_key = old.key; END`,
    sql`CREATE TRIGGER devices_search_ai AFTER INSERT ON devices BEGIN
      INSERT INTO license_search (license_key, device, body) VALUES (new.license_key, new.identifier, new.identifier || char(10) || new.name); END`,
    // license_key too: a re-key moves the devices to the new license row before deleting the old one.
    sql`CREATE TRIGGER devices_search_au AFTER UPDATE OF license_key, identifier, name ON devices BEGIN
      DELETE FROM license_search WHERE license_key = old.license_key AND device = old.identifier;
      INSERT INTO license_search (license_key, device, body) VALUES (new.license_key, new.identifier, new.identifier || char(10) || new.name); END`,
    sql`CREATE TRIGGER devices_search_ad AFTER DELETE ON devices BEGIN DELETE FROM license_search WHERE license_key = old.license_key AND device = old.identifier; END`,
    sql`INSERT INTO license_search (license_key, device, body) SELECT key, '', coalesce(email_normalized, '') || char(10) || key FROM licenses`,
    sql`INSERT INTO license_search (license_key, device, body) SELECT license_key, identifier, identifier || char(10) || name FROM devices`,
    sql`INSERT INTO license_search_fts (rowid, body) SELECT id, body FROM license_search`,
    sql`UPDATE license_search_state SET indexed_through = coalesce((SELECT max(id) FROM license_search), 0)`,
  ]) {
    await statement.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    for (const index of ['licenses_email_trgm', 'licenses_key_trgm', 'devices_search_trgm']) await sql`DROP INDEX IF EXISTS ${sql.ref(index)}`.execute(db);
    return;
  }
  for (const trigger of ['licenses_search_ai', 'licenses_search_au', 'licenses_search_ad', 'devices_search_ai', 'devices_search_au', 'devices_search_ad', 'license_search_ad']) {
    await sql`DROP TRIGGER IF EXISTS ${sql.ref(trigger)}`.execute(db);
  }
  await sql`DROP TABLE IF EXISTS license_search_fts`.execute(db);
  await sql`DROP TABLE IF EXISTS license_search`.execute(db);
  await sql`DROP TABLE IF EXISTS license_search_state`.execute(db);
  await sql`DROP TABLE IF EXISTS license_search_tombstones`.execute(db);
}

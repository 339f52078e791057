import type { Kysely } from 'kysely';

/**
 * The audit log's per-license index without the account: `(license_key, id)` instead of
 * `(user_id, license_key, id)`. A license key is unique across accounts (the licenses' primary
 * key), so the account adds nothing to the lookup, which still checks it on each row read; it made
 * every entry 36 bytes longer on the hot path (each activation inserts one entry at a random place
 * in this index: fewer entries a page, more splits). Measured (docs/benchmarks.md): an audit row
 * on better-sqlite3 19-23 µs with the old index, 15-19 µs with this one; a public activation over
 * HTTP about 4.7 µs (4.5%) cheaper. The rebuild holds the start-up about a second per million
 * entries (SQLite, measured).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('audit_events_license_idx').execute();
  await db.schema.createIndex('audit_events_license_idx').on('audit_events').columns(['license_key', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('audit_events_license_idx').execute();
  await db.schema.createIndex('audit_events_license_idx').on('audit_events').columns(['user_id', 'license_key', 'id']).execute();
}

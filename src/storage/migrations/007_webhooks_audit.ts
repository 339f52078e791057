import { type CreateTableBuilder, type Kysely, SqliteAdapter, sql } from 'kysely';

/** On SQLite, clustered on the primary key (WITHOUT ROWID): one B-tree per row instead of two. */
function clustered(db: Kysely<unknown>) {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  return <T extends string, C extends string>(table: CreateTableBuilder<T, C>) => (sqlite ? table.modifyEnd(sql`without rowid`) : table);
}

/**
 * Operator webhooks (endpoints, deliveries and each delivery's attempts) and the audit log of
 * license changes. Audit rows carry no foreign key to `licenses`: a deleted license's history
 * stays (until the retention purge), which is what an operator looks for after a delete.
 *
 * Deliveries, attempts and audit entries are written on the hot path (an activation) and keyed by
 * time-ordered ids (core/ids.ts): "newest first" and "older than" walk the primary key, so each
 * has one secondary index at most.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const cluster = clustered(db);
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    /** JSON array of event types, or ["*"]. */
    .addColumn('events', 'text', (c) => c.notNull())
    /** The signing secret, sealed with SecretBox (bound to the endpoint id). */
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('disabled_at', 'bigint')
    /** Set at the first failed attempt after a success; cleared by the next success. */
    .addColumn('failing_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_account_idx').on('webhook_endpoints').columns(['user_id', 'created_at']).execute();

  await cluster(db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    /** The exact JSON body sent (and signed) on every attempt. */
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_status_code', 'integer')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('delivered_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull()))
    .execute();
  await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute();

  await cluster(db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('attempted_at', 'bigint', (c) => c.notNull())
    /** Null when no answer came (refused, timed out, connection closed). */
    .addColumn('status_code', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('success', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'id']))
    .execute();

  await cluster(db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('license_key', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    /** JSON: the actor as the API shows it. */
    .addColumn('actor', 'text', (c) => c.notNull())
    /** JSON: what changed, or null. */
    .addColumn('changes', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull()))
    .execute();
  await db.schema.createIndex('audit_events_license_idx').on('audit_events').columns(['user_id', 'license_key', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['audit_events', 'webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) await db.schema.dropTable(table).execute();
}

import type { Kysely } from 'kysely';

/**
 * What each webhook attempt sent and got back, so an operator can see why a receiver refused a
 * delivery (issue 36): the request's headers (the body is the delivery's, stored once there) and
 * the answer's headers and first 4 KiB of body, with whether it was cut. Bounded in size by the
 * code that writes them (delivery.ts); the rows go with their delivery when it is purged (the
 * attempts' foreign key cascades), so no housekeeping of their own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_attempts').addColumn('request_headers', 'text').execute();
  await db.schema.alterTable('webhook_attempts').addColumn('response_headers', 'text').execute();
  await db.schema.alterTable('webhook_attempts').addColumn('response_body', 'text').execute();
  await db.schema.alterTable('webhook_attempts').addColumn('response_truncated', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['response_truncated', 'response_body', 'response_headers', 'request_headers']) {
    await db.schema.alterTable('webhook_attempts').dropColumn(column).execute();
  }
}

import type { Kysely } from 'kysely';

/**
 * Hardening (issue 14):
 * - `portal_tokens.link_hash`: the link a session was opened from, so signing out ends the link
 *   and every session opened from it (a token in a log or a browser history opens nothing then);
 * - `portal_link_requests.client`: link requests are limited per (address, client), so a third
 *   party spends only its own quota; a high per-address cap still counts every client.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('portal_tokens').addColumn('link_hash', 'text').execute();
  await db.schema.createIndex('portal_tokens_link_idx').on('portal_tokens').column('link_hash').execute();
  await db.schema.alterTable('portal_link_requests').addColumn('client', 'text').execute();
  await db.schema
    .createIndex('portal_link_requests_client_idx')
    .on('portal_link_requests')
    .columns(['email_normalized', 'client', 'requested_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('portal_link_requests_client_idx').execute();
  await db.schema.alterTable('portal_link_requests').dropColumn('client').execute();
  await db.schema.dropIndex('portal_tokens_link_idx').execute();
  await db.schema.alterTable('portal_tokens').dropColumn('link_hash').execute();
}

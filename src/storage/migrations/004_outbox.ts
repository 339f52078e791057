import type { Kysely } from 'kysely';

interface MailRow {
  id: string;
  kind: string;
  to_address: string;
  reply_to: string | null;
  subject: string;
  text_body: string;
  html_body: string;
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  next_attempt_at: number | string;
  claimed_by: string | null;
  claimed_until: number | string | null;
  last_error: string | null;
  created_at: number | string;
  sent_at: number | string | null;
}

const STATUS = { pending: 'pending', sent: 'done', failed: 'dead' } as const;
const CHUNK = 200;
const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/**
 * The general outbox: jobs of several kinds (e-mail now, operator webhooks next), each with a
 * JSON payload, a lease, retries with backoff and a dead state. The e-mail outbox's rows move in
 * as `mail` jobs (queued ones keep their attempts and due time, so nothing is sent twice or lost).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('claimed_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('done_at', 'bigint')
    .execute();
  await db.schema.createIndex('outbox_due_idx').on('outbox').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('outbox_done_idx').on('outbox').columns(['status', 'done_at']).execute();

  let after = '';
  for (;;) {
    const rows = (await db.selectFrom('mail_outbox').selectAll().where('id', '>', after).orderBy('id').limit(CHUNK).execute()) as MailRow[];
    if (rows.length === 0) break;
    await db
      .insertInto('outbox')
      .values(
        rows.map((r) => ({
          id: r.id,
          kind: 'mail',
          payload: JSON.stringify({ kind: r.kind, to: r.to_address, replyTo: r.reply_to, subject: r.subject, text: r.text_body, html: r.html_body }),
          status: STATUS[r.status],
          attempts: r.attempts,
          next_attempt_at: num(r.next_attempt_at),
          claimed_by: r.claimed_by,
          claimed_until: num(r.claimed_until),
          last_error: r.last_error,
          created_at: num(r.created_at),
          done_at: num(r.sent_at),
        })),
      )
      .execute();
    after = rows[rows.length - 1]!.id;
  }
  await db.schema.dropTable('mail_outbox').execute();
}

export async function down(): Promise<void> {
  throw new Error('004_outbox cannot be undone: mail_outbox rows were moved into the general outbox');
}

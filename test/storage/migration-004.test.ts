import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

const row = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
  id,
  kind: 'purchase',
  to_address: `${id}@example.com`,
  reply_to: 'help@shop.example',
  subject: `Subject ${id}`,
  text_body: `Text ${id}`,
  html_body: `<p>${id}</p>`,
  status,
  attempts: 2,
  next_attempt_at: 1_700_000_000_000,
  claimed_by: null,
  claimed_until: null,
  last_error: status === 'failed' ? '550 no' : null,
  created_at: 1_600_000_000_000,
  sent_at: status === 'sent' ? 1_650_000_000_000 : null,
  ...extra,
});

// E-mail queued before the upgrade must neither be lost nor sent twice by the general outbox.
forEachStore('migration 004: the e-mail outbox moves into the general outbox', (kind) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createDatabaseAt(kind, '003_portal_mail', (db) =>
      db.insertInto('mail_outbox').values([row('queued', 'pending'), row('sent', 'sent'), row('failed', 'failed')]).execute(),
    );
  });
  afterAll(async () => database?.drop());

  it('keeps every message with its state, attempts, times and content', async () => {
    const store = await database.open(); // runs the remaining migrations
    try {
      const rows = await store.read.all(store.db.selectFrom('outbox').selectAll().orderBy('id'));
      expect(rows.map((r) => [r.id, r.kind, r.status, r.attempts, r.done_at, r.last_error])).toEqual([
        ['failed', 'mail', 'dead', 2, null, '550 no'],
        ['queued', 'mail', 'pending', 2, null, null],
        ['sent', 'mail', 'done', 2, 1_650_000_000_000, null],
      ]);
      expect(rows[1]).toMatchObject({ next_attempt_at: 1_700_000_000_000, created_at: 1_600_000_000_000 });
      expect(JSON.parse(rows[1]!.payload)).toEqual({
        kind: 'purchase',
        to: 'queued@example.com',
        replyTo: 'help@shop.example',
        subject: 'Subject queued',
        text: 'Text queued',
        html: '<p>queued</p>',
      });
      const tables = await store.read.all(
        store.dialect === 'sqlite'
          ? store.db.selectFrom('sqlite_master' as any).select('name').where('name', '=', 'mail_outbox')
          : store.db.selectFrom('information_schema.tables' as any).select('table_name').where('table_name', '=', 'mail_outbox'),
      );
      expect(tables).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

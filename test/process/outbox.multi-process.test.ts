import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Outbox } from '../../src/modules/outbox/outbox.ts';
import { MAIL_JOB } from '../../src/modules/mail/queue.ts';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { type ServerProcess, startServer } from '../support/server-process.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';

// Several processes on one PostgreSQL drain one outbox: every message goes out exactly once.
const describePg = storeKinds().includes('postgres') ? describe : describe.skip;
const MESSAGES = 120;

describePg('e-mail outbox drained by two server processes on one PostgreSQL', () => {
  // A relay that takes 80 ms per message, so neither process can empty the outbox alone before the other starts.
  const smtp = new TestSmtpServer(80);
  let database: TestDatabase;
  let servers: ServerProcess[] = [];

  beforeAll(async () => {
    const smtpUrl = await smtp.start();
    database = await createTestDatabase('postgres');
    const store = await database.open();
    const outbox = new Outbox(store);
    await new StoreUnits(store, new EventBus()).run(async (unit) => {
      for (let i = 0; i < MESSAGES; i++) {
        await outbox.enqueue(unit, MAIL_JOB, { kind: 'test', to: `customer${i}@example.com`, replyTo: null, subject: `Message ${i}`, text: `Hello ${i}`, html: `<p>Hello ${i}</p>` });
      }
    });
    await store.close();
    servers = await Promise.all([startServer({ ...database.env, SMTP_URL: smtpUrl }), startServer({ ...database.env, SMTP_URL: smtpUrl })]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await smtp.stop();
    await database?.drop();
  });

  it('sends every queued message once, with both processes taking part', async () => {
    const store = await database.open();
    try {
      const outboxRows = () => store.read.all(store.db.selectFrom('outbox').select(['status', 'attempts', 'claimed_by']));
      // A message is sent only under a claim, and each claim counts an attempt. Once every row is
      // 'done' after exactly one attempt, every send that will ever happen has happened (the relay
      // stores a message before it acknowledges it, and the worker marks it done only after that):
      // no duplicate can still be on its way, so the inbox can be counted exactly.
      const rows = await waitFor(async () => {
        const current = await outboxRows();
        return current.length === MESSAGES && current.every((r) => r.status === 'done') ? current : undefined;
      }, { timeoutMs: 60_000, intervalMs: 100, message: `all ${MESSAGES} outbox jobs done` });
      expect(rows.map((r) => r.attempts)).toEqual(new Array(MESSAGES).fill(1));
      expect(new Set(rows.map((r) => r.claimed_by)).size).toBe(2);

      const subjects = smtp.inbox.map((m) => m.subject);
      expect(subjects).toHaveLength(MESSAGES);
      expect(new Set(subjects)).toEqual(new Set(Array.from({ length: MESSAGES }, (_, i) => `Message ${i}`)));
    } finally {
      await store.close();
    }
  }, 90_000);
});

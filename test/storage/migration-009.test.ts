import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { hashToken } from '../../src/modules/portal/service.ts';
import { createServices } from '../../src/services.ts';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

const NOW = Date.now();

// Sessions and link requests from before the upgrade keep working under the new rules.
forEachStore('migration 009: portal sessions know their link, link requests their client', (kind) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createDatabaseAt(kind, '004_outbox', async (db) => {
      const token = (hash: string, kind: string) => ({ token_hash: hash, kind, email_normalized: 'old@example.com', user_id: null, expires_at: NOW + 3_600_000, created_at: NOW - 60_000 });
      await db.insertInto('portal_tokens').values([token(hashToken('old-link'), 'link'), token(hashToken('old-session'), 'session')]).execute();
      await db.insertInto('portal_link_requests').values(Array.from({ length: 3 }, (_, i) => ({ email_normalized: 'old@example.com', requested_at: NOW - 60_000 + i }))).execute();
    });
  });
  afterAll(async () => database?.drop());

  it('an old session still opens and signs out; old requests count toward the all-clients cap only', async () => {
    const store = await database.open(); // runs migration 009
    try {
      const config = loadConfig({ ...database.env, SECRET_KEY: 'a'.repeat(64) });
      const { portal } = createServices(store, config.secretKey, undefined, config);
      const session = await portal.session('old-session');
      expect(session).toMatchObject({ email: 'old@example.com', linkHash: null });
      await portal.endSession(session!);
      expect(await portal.session('old-session')).toBeUndefined();
      // Three requests of unknown clients: a new client still has its own 2, the address its cap of 5.
      const limits = { perClient: 2, perAddress: 5 };
      const outcomes = [];
      for (let i = 0; i < 3; i++) outcomes.push(await portal.requestLink('old@example.com', '198.51.100.9', limits));
      expect(outcomes.map((o) => ('accepted' in o ? 'ok' : o.by))).toEqual(['ok', 'ok', 'client']);
      expect(await portal.requestLink('old@example.com', '198.51.100.10', limits)).toMatchObject({ by: 'address' });
    } finally {
      await store.close();
    }
  });
});

import { expect, it } from 'vitest';
import { openStore } from '../../src/storage/index.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';
import { postJson, runCli, startServer } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

// The stored answer is committed before it is sent, without waiting for its own sync
// (docs/decisions/idempotency-answer.md): the death of the process right after an answer must
// not lose it, and no key may ever create twice.
forEachStore('Idempotency-Key across kill -9', (kind) => {
  it('every acknowledged keyed creation replays its answer after a restart; none creates twice', async () => {
    const database = await createTestDatabase(kind);
    let server = await startServer(database.env);
    try {
      await runCli(database.env, ['account', 'create', '--email', 'idem@example.com', '--password', 'long enough password']);
      const auth = { authorization: `Bearer ${(await runCli(database.env, ['api-key', 'create', '--email', 'idem@example.com'])).json.apiKey}` };
      const product = (await postJson(`${server.url}/api/v1/products`, { name: 'Keyed' }, auth)).body;
      const body = { productId: product.id, type: 'perpetual', maxDevices: 1 };
      const sent: string[] = [];
      const acknowledged = new Map<string, unknown>();
      const worker = async () => {
        for (;;) {
          const key = `k-${sent.length}`;
          sent.push(key);
          try {
            const res = await postJson(`${server.url}/api/v1/licenses`, body, { ...auth, 'idempotency-key': key });
            if (res.status === 200) acknowledged.set(key, res.body);
          } catch {
            return; // the server is gone
          }
        }
      };
      const workers = Array.from({ length: 10 }, worker);
      await waitFor(() => acknowledged.size >= 100, { timeoutMs: 30_000, message: '100 acknowledged creations' });
      expect(await server.stop('SIGKILL')).toBeNull();
      await Promise.all(workers);

      server = await startServer(database.env);
      const created = new Set<string>();
      let inUse = 0;
      for (const key of sent) {
        const res = await postJson(`${server.url}/api/v1/licenses`, body, { ...auth, 'idempotency-key': key });
        if (acknowledged.has(key)) expect(res.body).toEqual(acknowledged.get(key)); // replayed, byte for byte
        if (res.status === 200) created.add(res.body.key);
        // In flight at the kill: its change committed but not its answer (refused, never run again),
        // or on PostgreSQL only claimed (refused until the claim's lease runs out).
        else if (res.body.error.code === 'idempotency_key_in_use' && !acknowledged.has(key)) inUse++;
        else throw new Error(`unexpected ${res.status} ${JSON.stringify(res.body)} for ${key}`);
      }
      const store = await openStore({ dataDir: database.env.DATA_DIR, databaseUrl: database.env.DATABASE_URL });
      const licenses = await store.read.all(store.db.selectFrom('licenses').select('key').where('product_id', '=', product.id));
      // A change recorded with its key but no answer: leased until the key expires.
      const recorded = await store.read.all(
        store.db.selectFrom('idempotency_keys').select('idem_key').where('response_status', 'is', null).whereRef('locked_until', '=', 'expires_at'),
      );
      await store.close();
      expect(created.size + inUse).toBe(sent.length);
      expect(recorded.length).toBeLessThanOrEqual(inUse);
      expect(licenses).toHaveLength(created.size + recorded.length); // one license per key, never two
    } finally {
      await server.stop('SIGKILL');
      await database.drop();
    }
  }, 90_000);
});

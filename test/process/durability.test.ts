import { expect, it } from 'vitest';
import { openStore } from '../../src/storage/index.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';
import { postJson, runCli, startServer } from '../support/server-process.ts';

async function seed(env: Record<string, string | undefined>, url: string) {
  await runCli(env, ['account', 'create', '--email', 'ops@example.com', '--password', 'long enough password']);
  const apiKey = (await runCli(env, ['api-key', 'create', '--email', 'ops@example.com'])).json.apiKey;
  const auth = { authorization: `Bearer ${apiKey}` };
  const product = (await postJson(`${url}/api/v1/products`, { name: 'Durable' }, auth)).body;
  const license = (await postJson(`${url}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 100000 }, auth)).body;
  return { productId: product.id as string, key: license.key as string };
}

forEachStore('crash safety', (kind) => {
  it('every acknowledged activation survives kill -9 in the middle of the load', async () => {
    const database = await createTestDatabase(kind);
    const server = await startServer(database.env);
    try {
      const { productId, key } = await seed(database.env, server.url);
      const acknowledged: string[] = [];
      let n = 0;
      const worker = async () => {
        for (;;) {
          const id = `device-${n++}`;
          try {
            const res = await postJson(`${server.url}/api/v1/public/licenses/activate`, { licenseKey: key, productId, deviceIdentifier: id, deviceName: 'n' });
            if (res.status === 200) acknowledged.push(id);
          } catch {
            return; // the server is gone
          }
        }
      };
      const workers = Array.from({ length: 20 }, worker);
      while (acknowledged.length < 300) await new Promise((r) => setTimeout(r, 10));
      await server.stop('SIGKILL');
      await Promise.all(workers);

      const store = await openStore({ dataDir: database.env.DATA_DIR, databaseUrl: database.env.DATABASE_URL });
      const rows = await store.read.all(store.db.selectFrom('devices').select('identifier').where('license_key', '=', key));
      await store.close();
      const stored = new Set(rows.map((r) => r.identifier));
      expect(acknowledged.length).toBeGreaterThanOrEqual(300);
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    } finally {
      await server.stop('SIGKILL');
      await database.drop();
    }
  }, 60_000);

  it('SIGTERM finishes in-flight requests, closes the store and exits 0', async () => {
    const database = await createTestDatabase(kind);
    const server = await startServer(database.env);
    try {
      const { productId, key } = await seed(database.env, server.url);
      const inFlight = Array.from({ length: 50 }, (_, i) =>
        postJson(`${server.url}/api/v1/public/licenses/activate`, { licenseKey: key, productId, deviceIdentifier: `d${i}`, deviceName: 'n' }),
      );
      // Let the requests reach the server, then ask it to stop while they are being answered.
      await new Promise((r) => setTimeout(r, 20));
      const exit = server.stop('SIGTERM');
      const answers = await Promise.allSettled(inFlight);
      expect(await exit).toBe(0);
      expect(server.output()).toContain('shut down cleanly');
      const ok = answers.filter((a) => a.status === 'fulfilled' && a.value.status === 200).length;
      const store = await openStore({ dataDir: database.env.DATA_DIR, databaseUrl: database.env.DATABASE_URL });
      const rows = await store.read.all(store.db.selectFrom('devices').select('identifier').where('license_key', '=', key));
      await store.close();
      // Every request the server received was answered: committed (200) or refused before any
      // work (503, error model); none was cut off half-way, and exactly the acknowledged ones are stored.
      expect(rows.length).toBe(ok);
      expect(ok).toBeGreaterThan(0);
      for (const a of answers) {
        if (a.status === 'fulfilled') {
          if (a.value.status !== 200) expect(a.value).toMatchObject({ status: 503, body: { error: { code: 'service_unavailable' } } });
        } else {
          // Sent after the listener closed, or on a keep-alive socket closed while idle: never received.
          const code = (a.reason as { cause?: { code?: string } }).cause?.code;
          expect(['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET']).toContain(code);
        }
      }
    } finally {
      await server.stop('SIGKILL');
      await database.drop();
    }
  }, 60_000);
});

it('logs how to create the first account on a start with none', async () => {
  const database = await createTestDatabase('sqlite');
  const server = await startServer(database.env);
  try {
    // The hint follows the "listening" line: give it a moment.
    for (let i = 0; i < 50 && !/No account yet/.test(server.output()); i++) await new Promise((r) => setTimeout(r, 100));
    expect(server.output()).toMatch(/No account yet/);
  } finally {
    await server.stop();
    await database.drop();
  }
});

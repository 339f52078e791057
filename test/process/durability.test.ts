import { expect, it } from 'vitest';
import { openStore } from '../../src/storage/index.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';
import { postJson, runCli, startServer } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

const REQUESTS = 50;

/** How many activation requests the server has logged (at LOG_LEVEL=debug) as received in `output`. */
function activationsReceived(output: string): number {
  return output.split('\n').filter((line) => line.includes('"msg":"request received"') && line.includes('"url":"/api/v1/public/licenses/activate"')).length;
}

/** How many activation requests the server's access log says it answered, with `status`. */
function activationsAnswered(output: string, status: number): number {
  return output.split('\n').filter((line) => line.includes('"msg":"request"') && line.includes('"route":"/api/v1/public/licenses/activate"') && line.includes(`"status":${status},`)).length;
}

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
      await waitFor(() => acknowledged.length >= 300, { timeoutMs: 30_000, message: '300 acknowledged activations' });
      expect(await server.stop('SIGKILL')).toBeNull(); // killed by the signal, not exited
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
    // debug: a line when each request arrives, besides the access line when it is answered.
    const server = await startServer({ ...database.env, LOG_LEVEL: 'debug' });
    try {
      const { productId, key } = await seed(database.env, server.url);
      let answered = 0;
      const inFlight = Array.from({ length: REQUESTS }, (_, i) =>
        postJson(`${server.url}/api/v1/public/licenses/activate`, { licenseKey: key, productId, deviceIdentifier: `d${i}`, deviceName: 'n' }).finally(() => answered++),
      );
      // Signal once some are answered, while the rest are still arriving or being served (the
      // log is written asynchronously, so the client's count is the prompt one).
      await waitFor(() => answered >= 10, { timeoutMs: 10_000, message: '10 activations answered' });
      const exit = server.stop('SIGTERM');
      const answers = await Promise.allSettled(inFlight);
      expect(await exit).toBe(0);
      const output = server.output();
      expect(output).toContain('shut down cleanly');
      const signalAt = output.indexOf('shutting down: finishing in-flight requests');
      expect(signalAt).toBeGreaterThan(-1);

      // Each answer is committed (200), refused before any work (503, error model), or the request
      // never reached the server (sent after the listener closed, or on a keep-alive socket closed
      // while idle). Nothing else: no 500, no connection cut off half-way through a request.
      const outcomes = answers.map((a) => {
        if (a.status === 'fulfilled') {
          if (a.value.status === 200) return 'committed';
          if (a.value.status === 503 && a.value.body?.error?.code === 'service_unavailable') return 'refused';
          return `unexpected answer ${a.value.status} ${JSON.stringify(a.value.body)}`;
        }
        const code = (a.reason as { cause?: { code?: string } }).cause?.code;
        return ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(code!) ? 'not received' : `unexpected error ${code}`;
      });
      expect(outcomes.filter((o) => o.startsWith('unexpected'))).toEqual([]);
      const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
      // Every request the server took in was answered, and each answer has its access line: none
      // was lost from the log's buffer on the way out.
      expect(count('committed') + count('refused')).toBe(activationsReceived(output));
      expect(activationsAnswered(output, 200)).toBe(count('committed'));
      expect(activationsAnswered(output, 503)).toBe(count('refused'));
      // Those it had taken in before the signal were in flight when it came: all of them finished.
      const receivedBeforeSignal = activationsReceived(output.slice(0, signalAt));
      expect(receivedBeforeSignal).toBeGreaterThanOrEqual(10);
      expect(count('committed')).toBeGreaterThanOrEqual(receivedBeforeSignal);

      // Exactly the acknowledged activations are stored.
      const store = await openStore({ dataDir: database.env.DATA_DIR, databaseUrl: database.env.DATABASE_URL });
      const rows = await store.read.all(store.db.selectFrom('devices').select('identifier').where('license_key', '=', key));
      await store.close();
      const acknowledged = outcomes.flatMap((o, i) => (o === 'committed' ? [`d${i}`] : []));
      expect(rows.map((r) => r.identifier).sort()).toEqual(acknowledged.sort());
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
    // The hint follows the "listening" line.
    await waitFor(() => /No account yet/.test(server.output()), { timeoutMs: 5000, message: 'the first-account hint' });
    // It names the dashboard's first-run page (at BASE_URL, which vitest sets to "/" in the environment).
    expect(server.output()).toMatch(/Open \S*\/dashboard to create the first one/);
  } finally {
    await server.stop();
    await database.drop();
  }
});

import { expect, it } from 'vitest';
import { openStore } from '../../src/storage/index.ts';
import { postJson, runCli, startServer } from '../support/server-process.ts';
import { createTestDatabase } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Issue 33, item 12. An attempt's answer timeout of 60 s makes a webhook claim's lease about 80 s:
 * without the reclaim at start, the job the killed process held waits that long.
 */
const ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_CONNECT_TIMEOUT_MS: '1000' };

it('on SQLite, jobs a killed process had claimed are worked at the next start, not after their lease', async () => {
  const database = await createTestDatabase('sqlite');
  const env = { ...database.env, ...ENV };
  const receiver = await WebhookReceiver.start();
  receiver.fallback = 'hang';
  let server = await startServer(env);
  try {
    await runCli(env, ['account', 'create', '--email', 'crash@example.com', '--password', 'long enough password']);
    const auth = { authorization: `Bearer ${(await runCli(env, ['api-key', 'create', '--email', 'crash@example.com'])).json.apiKey}` };
    expect((await postJson(`${server.url}/api/v1/webhooks`, { url: receiver.url, events: ['license.created'] }, auth)).status).toBe(200);
    const productId = (await postJson(`${server.url}/api/v1/products`, { name: 'Crash' }, auth)).body.id as string;
    const key = (await postJson(`${server.url}/api/v1/licenses`, { productId, type: 'perpetual', maxDevices: 1 }, auth)).body.key as string;
    // The attempt is in flight (the receiver holds it) when the process dies.
    await waitFor(() => receiver.received.length === 1, { timeoutMs: 10_000, message: 'the first attempt' });
    expect(await server.stop('SIGKILL')).toBeNull();

    const store = await openStore({ dataDir: database.env.DATA_DIR });
    const [claimed] = await store.read.all(store.db.selectFrom('outbox').select(['claimed_until', 'status']).where('kind', '=', 'webhook'));
    await store.close();
    expect(claimed).toMatchObject({ status: 'pending' });
    expect(Number(claimed!.claimed_until)).toBeGreaterThan(Date.now() + 60_000); // the dead claim's lease

    receiver.fallback = 204;
    const restarted = Date.now();
    server = await startServer(env);
    await waitFor(() => receiver.received.length === 2, { timeoutMs: 15_000, message: 'the job retried after the restart' });
    expect(Date.now() - restarted).toBeLessThan(15_000);
    expect(receiver.received[1]!.json.data.license.key).toBe(key);
    expect(server.output()).toMatch(/"released":1[,}].*claims of a process that is gone/);
  } finally {
    await server.stop('SIGKILL');
    await receiver.close();
    await database.drop();
  }
}, 90_000);

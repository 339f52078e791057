import { expect, it } from 'vitest';
import { openStore } from '../../src/storage/index.ts';
import { postJson, runCli, startServer } from '../support/server-process.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

// Short timeouts: a delivery cut off by the kill is claimed again within seconds after the restart.
const ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_CONNECT_TIMEOUT_MS: '1000' };

forEachStore('webhooks across kill -9', (kind) => {
  it('delivers the webhook of every acknowledged change after a restart, and none for a change that did not commit', async () => {
    const database = await createTestDatabase(kind);
    const env = { ...database.env, ...ENV };
    const receiver = await WebhookReceiver.start();
    let server = await startServer(env);
    try {
      await runCli(env, ['account', 'create', '--email', 'hooks@example.com', '--password', 'long enough password']);
      const apiKey = (await runCli(env, ['api-key', 'create', '--email', 'hooks@example.com'])).json.apiKey;
      const auth = { authorization: `Bearer ${apiKey}` };
      expect((await postJson(`${server.url}/api/v1/webhooks`, { url: receiver.url, events: ['license.created', 'device.activated'] }, auth)).status).toBe(200);
      const productId = (await postJson(`${server.url}/api/v1/products`, { name: 'Durable hooks' }, auth)).body.id as string;
      const key = (await postJson(`${server.url}/api/v1/licenses`, { productId, type: 'perpetual', maxDevices: 100000 }, auth)).body.key as string;

      // Half the clients create licenses, half activate devices, until the kill.
      const createdKeys: string[] = [key];
      const activated: string[] = [];
      let n = 0;
      const client = (creates: boolean) => async () => {
        for (;;) {
          try {
            if (creates) {
              const res = await postJson(`${server.url}/api/v1/licenses`, { productId, type: 'perpetual', maxDevices: 1 }, auth);
              if (res.status === 200) createdKeys.push(res.body.key);
            } else {
              const id = `device-${n++}`;
              const res = await postJson(`${server.url}/api/v1/public/licenses/activate`, { licenseKey: key, productId, deviceIdentifier: id, deviceName: 'n' });
              if (res.status === 200) activated.push(id);
            }
          } catch {
            return; // the server is gone
          }
        }
      };
      const clients = Array.from({ length: 16 }, (_, i) => client(i % 2 === 0)());
      await waitFor(() => createdKeys.length >= 100 && activated.length >= 100, { timeoutMs: 40_000, message: '100 acknowledged creations and activations' });
      expect(await server.stop('SIGKILL')).toBeNull();
      await Promise.all(clients);

      server = await startServer(env);
      const deliveredKeys = () => new Set(receiver.of('license.created').map((r) => r.json.data.license.key as string));
      const deliveredDevices = () => new Set(receiver.of('device.activated').map((r) => r.json.data.device.identifier as string));
      await waitFor(() => createdKeys.every((k) => deliveredKeys().has(k)) && activated.every((d) => deliveredDevices().has(d)), {
        timeoutMs: 45_000,
        message: 'a delivery for every acknowledged change',
      });

      // Every delivery is of a change that committed (some committed without their answer reaching
      // the client before the kill: those are delivered too, as they happened).
      const store = await openStore({ dataDir: database.env.DATA_DIR, databaseUrl: database.env.DATABASE_URL });
      const keys = new Set((await store.read.all(store.db.selectFrom('licenses').select('key'))).map((r) => r.key));
      const devices = new Set((await store.read.all(store.db.selectFrom('devices').select('identifier').where('license_key', '=', key))).map((r) => r.identifier));
      const events = new Set((await store.read.all(store.db.selectFrom('webhook_deliveries').select('event_id'))).map((r) => r.event_id));
      await store.close();
      expect([...deliveredKeys()].filter((k) => !keys.has(k))).toEqual([]);
      expect([...deliveredDevices()].filter((d) => !devices.has(d))).toEqual([]);
      expect(receiver.received.filter((r) => !events.has(r.json.id))).toEqual([]);
      // One delivery row per committed change: no event was queued twice.
      expect(events.size).toBe(keys.size + devices.size);
    } finally {
      await server.stop('SIGKILL');
      await receiver.close();
      await database.drop();
    }
  }, 120_000);
});

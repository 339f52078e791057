import { createServer, type Server } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/index.ts';
import { SHARED_REDIS_URL, uniquePrefix } from '../support/redis.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';
import { postJson, runCli, type ServerProcess, startServer } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

// Production's shape (docs/operations.md): two processes on one PostgreSQL and one Redis.
const describePg = storeKinds().includes('postgres') ? describe : describe.skip;
const PER_MINUTE = 40;

describePg('two server processes on one PostgreSQL and one Redis', () => {
  const prefix = uniquePrefix('multi-process');
  let database: TestDatabase;
  let store: Store;
  let servers: ServerProcess[] = [];
  let auth: Record<string, string>;
  const url = (i: number) => servers[i % 2]!.url;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    // WEBHOOK_ALLOW_PRIVATE: the webhook receiver below is on loopback.
    const env = { ...database.env, REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix, RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: String(PER_MINUTE), WEBHOOK_ALLOW_PRIVATE: 'true' };
    servers = await Promise.all([startServer(env), startServer(env)]);
    store = await database.open();
    await runCli(database.env, ['account', 'create', '--email', 'ops@example.com', '--password', 'long enough password']);
    auth = { authorization: `Bearer ${(await runCli(database.env, ['api-key', 'create', '--email', 'ops@example.com'])).json.apiKey}` };
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await store?.close();
    await database?.drop();
    const redis = new Redis(SHARED_REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('a public rate limit holds across both processes', async () => {
    const results = await Promise.all(
      Array.from({ length: PER_MINUTE + 10 }, (_, i) => postJson(`${url(i)}/api/v1/public/licenses/validate`, { licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', productId: 'p_x' })),
    );
    expect(results.filter((r) => r.status !== 429)).toHaveLength(PER_MINUTE);
    expect(results.filter((r) => r.status === 429).every((r) => r.body.error.code === 'rate_limited')).toBe(true);
  });

  it('one Idempotency-Key sent to both processes at once creates one license', async () => {
    const product = (await postJson(`${url(0)}/api/v1/products`, { name: 'Idempotent' }, auth)).body;
    const headers = { ...auth, 'idempotency-key': 'across-processes' };
    const body = { productId: product.id, type: 'perpetual', maxDevices: 1 };
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => postJson(`${url(i)}/api/v1/licenses`, body, headers)));
    const keys = new Set(results.filter((r) => r.status === 200).map((r) => r.body.key));
    expect(keys.size).toBe(1);
    expect(results.every((r) => r.status === 200 || r.body.error.code === 'idempotency_key_in_use')).toBe(true);
    const stored = await store.read.all(store.db.selectFrom('licenses').select('key').where('product_id', '=', product.id));
    expect(stored).toEqual([{ key: [...keys][0] }]);
    // Once done, either process replays it.
    for (const i of [0, 1]) {
      const res = await fetch(`${url(i)}/api/v1/licenses`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.headers.get('idempotent-replayed')).toBe('true');
      expect((await res.json()).key).toBe([...keys][0]);
    }
  });

  it('maxDevices holds when both processes activate at once', async () => {
    const product = (await postJson(`${url(0)}/api/v1/products`, { name: 'Devices' }, auth)).body;
    const license = (await postJson(`${url(1)}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 4 }, auth)).body;
    const results = await Promise.all(
      Array.from({ length: 36 }, (_, i) =>
        postJson(`${url(i)}/api/v1/public/licenses/activate`, { licenseKey: license.key, productId: product.id, deviceIdentifier: `device-${i % 12}`, deviceName: 'n' }),
      ),
    );
    expect(results.every((r) => r.status === 200 || r.body.error.code === 'max_devices_reached')).toBe(true);
    const stored = await store.read.all(store.db.selectFrom('devices').select('identifier').where('license_key', '=', license.key));
    expect(stored).toHaveLength(4);
    expect(new Set(results.filter((r) => r.status === 200).map((r) => r.body.device.identifier))).toEqual(new Set(stored.map((d) => d.identifier)));
  });

  it('each webhook event is delivered once, whichever process works the outbox', async () => {
    const received: { id: string; key: string }[] = [];
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const event = JSON.parse(body) as { id: string; data: { license: { key: string } } };
        received.push({ id: event.id, key: event.data.license.key });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
      expect((await postJson(`${url(0)}/api/v1/webhooks`, { url: hook, events: ['license.created'] }, auth)).status).toBe(200);
      const product = (await postJson(`${url(1)}/api/v1/products`, { name: 'Webhooks' }, auth)).body;
      // License creations answered by both processes; both processes' outbox workers claim deliveries.
      const created = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => (await postJson(`${url(i)}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 1 }, auth)).body.key as string),
      );
      const settled = () => store.read.all(store.db.selectFrom('webhook_deliveries').select('status').where('account_id', '=', product.userId));
      await waitFor(async () => {
        const rows = await settled();
        return rows.length === created.length && rows.every((r) => r.status === 'succeeded');
      }, { timeoutMs: 30_000, message: 'every delivery succeeded' });
      expect(received).toHaveLength(created.length);
      expect(new Set(received.map((r) => r.id)).size).toBe(created.length);
      expect(new Set(received.map((r) => r.key))).toEqual(new Set(created));
    } finally {
      receiver.close();
    }
  }, 60_000);
});

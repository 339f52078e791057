import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';
import { postJson, runCli, type ServerProcess, startServer } from '../support/server-process.ts';

// Several stateless processes on one PostgreSQL: migrations at a simultaneous start, and activation atomicity.
const describePg = storeKinds().includes('postgres') ? describe : describe.skip;

describePg('two server processes sharing one PostgreSQL', () => {
  let database: TestDatabase;
  let servers: ServerProcess[] = [];
  let apiKey = '';

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    // Both start on an empty database at the same moment: the migration lock must serialize them.
    servers = await Promise.all([startServer(database.env), startServer(database.env)]);
    await runCli(database.env, ['account', 'create', '--email', 'ops@example.com', '--password', 'long enough password']);
    apiKey = (await runCli(database.env, ['api-key', 'create', '--email', 'ops@example.com'])).json.apiKey;
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await database?.drop();
  });

  it('both processes migrated and serve', async () => {
    for (const s of servers) expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
  });

  it('concurrent activations through both processes never exceed maxDevices', async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    const product = await postJson(`${servers[0]!.url}/api/v1/products`, { name: 'Shared' }, auth);
    const license = await postJson(`${servers[1]!.url}/api/v1/licenses`, { productId: product.body.id, type: 'perpetual', maxDevices: 5 }, auth);
    const key = license.body.key;
    const results = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        postJson(`${servers[i % 2]!.url}/api/v1/public/licenses/activate`, {
          licenseKey: key,
          productId: product.body.id,
          deviceIdentifier: `device-${i % 40}`, // 40 distinct devices, each asked for three times
          deviceName: 'n',
        }),
      ),
    );
    const okDevices = new Set(results.filter((r) => r.status === 200).map((r) => r.body.device.identifier));
    expect(okDevices.size).toBe(5);
    expect(results.every((r) => r.status === 200 || r.body.error.code === 'max_devices_reached')).toBe(true);
    const stored = await fetch(`${servers[0]!.url}/api/v1/licenses`, { headers: { ...auth, 'license-key': key } }).then((r) => r.json());
    expect(stored.activeDevices).toHaveLength(5);
    expect(new Set(stored.activeDevices.map((d: { identifier: string }) => d.identifier))).toEqual(okDevices);
  });

  it('50 concurrent activations through both processes on a floating license with 3 seats give exactly 3 leases', async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    const product = await postJson(`${servers[0]!.url}/api/v1/products`, { name: 'Floating', floating: { enabled: true, leaseSeconds: 600 } }, auth);
    const license = await postJson(`${servers[1]!.url}/api/v1/licenses`, { productId: product.body.id, type: 'perpetual', maxDevices: 3 }, auth);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        postJson(`${servers[i % 2]!.url}/api/v1/public/licenses/activate`, { licenseKey: license.body.key, productId: product.body.id, deviceIdentifier: `container-${i}`, deviceName: 'n' }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.every((r) => r.status === 200 || r.body.error.code === 'max_devices_reached')).toBe(true);
    const stored = await fetch(`${servers[0]!.url}/api/v1/licenses`, { headers: { ...auth, 'license-key': license.body.key } }).then((r) => r.json());
    expect(stored.activeDevices).toHaveLength(3);
    expect(stored.activeDevices.every((d: { leaseExpiresAt: string | null }) => d.leaseExpiresAt !== null)).toBe(true);
  });
});

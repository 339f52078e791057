import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/index.ts';
import { purchaseMailsTo } from '../support/payments.ts';
import { postJson, runCli, type ServerProcess, startServer } from '../support/server-process.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';
import { signedEvent, StripeDouble, stripeObjects } from '../support/stripe-double.ts';

const describePg = storeKinds().includes('postgres') ? describe : describe.skip;

describePg('Stripe fulfilment across two server processes sharing one PostgreSQL', () => {
  const double = new StripeDouble();
  let database: TestDatabase;
  let store: Store;
  let servers: ServerProcess[] = [];
  let auth: Record<string, string> = {};

  beforeAll(async () => {
    await double.start();
    database = await createTestDatabase('postgres');
    const env = { ...database.env, STRIPE_API_URL: double.url };
    servers = [await startServer(env)];
    servers.push(await startServer(env));
    store = await database.open();
    await runCli(database.env, ['account', 'create', '--email', 'shop@example.com', '--password', 'long enough password']);
    auth = { authorization: `Bearer ${(await runCli(database.env, ['api-key', 'create', '--email', 'shop@example.com'])).json.apiKey}` };
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await store?.close();
    await database?.drop();
    await double.stop();
  });

  it('10 concurrent deliveries of one event, split over both processes: 1 license, 1 e-mail', async () => {
    const key = double.account();
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const put = await fetch(`${a.url}/api/v1/payments/stripe`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ restrictedKey: key }) });
    expect(put.status).toBe(200);
    const endpoint = double.endpoints.get(((await put.json()) as { webhookEndpointId: string }).webhookEndpointId)!;
    const connectionId = endpoint.url.split('/').pop()!;
    const product = await postJson(`${b.url}/api/v1/products`, { name: 'Shared' }, auth);
    const price = double.price(key);
    expect((await postJson(`${b.url}/api/v1/products/${product.body.id}/prices`, { priceId: price, maxDevices: 2, licenseType: 'perpetual' }, auth)).status).toBe(200);

    const session = double.session(key, [{ priceId: price }]);
    const email = `two-processes-${Date.now()}@example.com`;
    const event = signedEvent(endpoint.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email }));
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        fetch(`${servers[i % 2]!.url}/api/v1/payments/stripe/webhook/${connectionId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': event.header },
          body: event.payload,
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const licenses = await store.read.all(store.db.selectFrom('licenses').select(['key', 'max_devices', 'email']).where('product_id', '=', product.body.id));
    expect(licenses).toEqual([{ key: expect.any(String), max_devices: 2, email }]);
    expect(await purchaseMailsTo(store, email)).toBe(1);
    const purchases = await fetch(`${a.url}/api/v1/payments/purchases`, { headers: auth }).then((r) => r.json());
    expect(purchases.data).toMatchObject([{ sessionId: session, status: 'fulfilled', licenseKeys: [licenses[0]!.key] }]);
  });
});

import Stripe from 'stripe';
import { StripeDouble, stripeObjects } from '../test/support/stripe-double.ts';
import type { Scenario, ScenarioContext } from './scenarios.ts';

/**
 * Issue 9: Stripe fulfilment under load. The Stripe test double runs in the bench process (on the
 * load generator's core, loopback); the server is started with STRIPE_API_URL pointing at it.
 * Every request is a new, correctly signed `checkout.session.completed` for a new session: the
 * server verifies the signature, lists the session's line items at the double, then creates the
 * purchase, one license and its purchase e-mail in one durable unit.
 */
const double = new StripeDouble();
double.record = false;
const json = { 'content-type': 'application/json' };
const runTag = Date.now().toString(36);
let serial = 0;

/** Per store run: the connection the prepare step made. */
const connections = new Map<string, { connectionId: string; secret: string }>();

async function connectAndMap({ baseUrl, fixture }: ScenarioContext): Promise<void> {
  const key = double.account();
  const auth = { ...json, authorization: `Bearer ${fixture.apiKey}` };
  const put = await fetch(`${baseUrl}/api/v1/payments/stripe`, { method: 'PUT', headers: auth, body: JSON.stringify({ restrictedKey: key }) });
  if (!put.ok) throw new Error(`connecting Stripe: HTTP ${put.status} ${await put.text()}`);
  const endpoint = double.endpoints.get(((await put.json()) as { webhookEndpointId: string }).webhookEndpointId)!;
  const price = double.price(key);
  double.anySession(key, [{ priceId: price, quantity: 1 }]);
  const map = await fetch(`${baseUrl}/api/v1/products/${fixture.productId}/prices`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ priceId: price, maxDevices: 2, licenseType: 'timed', offsetDays: 365 }),
  });
  if (!map.ok) throw new Error(`mapping the price: HTTP ${map.status} ${await map.text()}`);
  connections.set(baseUrl, { connectionId: endpoint.url.split('/').pop()!, secret: endpoint.secret });
}

export const paymentScenarios: Scenario[] = [
  {
    name: 'stripe purchase',
    distinct: true,
    // Issue 9's target: 300 purchase events/s with p99 under 100 ms.
    pacedRate: 300,
    async start() {
      await double.start();
      return { env: { STRIPE_API_URL: double.url }, stop: () => double.stop() };
    },
    prepare: connectAndMap,
    request: ({ baseUrl }) => ({
      method: 'POST',
      path: `/api/v1/payments/stripe/webhook/${connections.get(baseUrl)!.connectionId}`,
      setupRequest: (req) => {
        const { secret } = connections.get(baseUrl)!;
        const session = `cs_test_bench_${runTag}_${serial++}`;
        const payload = JSON.stringify({
          id: `evt_bench_${runTag}_${serial}`,
          object: 'event',
          api_version: '2025-01-27.acacia',
          created: Math.floor(Date.now() / 1000),
          data: { object: stripeObjects.checkoutSession({ id: session, email: `buyer-${serial % 1000}@example.com` }) },
          livemode: false,
          pending_webhooks: 1,
          request: { id: null, idempotency_key: null },
          type: 'checkout.session.completed',
        });
        return { ...req, headers: { ...json, 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret }) }, body: payload };
      },
    }),
    check: (status, body) => (status === 200 && (body as { received?: unknown }).received === true ? undefined : `HTTP ${status}: ${JSON.stringify(body)}`),
  },
];

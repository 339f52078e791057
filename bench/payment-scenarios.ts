import Stripe from 'stripe';
import { StripeDouble, stripeObjects } from '../test/support/stripe-double.ts';
import type { Scenario, ScenarioContext } from './scenarios.ts';

/**
 * Stripe under load. The Stripe test double runs in the bench process (on the load generator's
 * core, loopback); the server is started with STRIPE_API_URL pointing at it.
 *
 * - Issue 9, `stripe purchase`: every request is a new, correctly signed `checkout.session.completed`
 *   for a new session: the server verifies the signature, lists the session's line items at the
 *   double, then creates the purchase, one license and its purchase e-mail in one durable unit.
 * - Issue 34, `stripe renewal`: every request is a new, correctly signed `invoice.paid` of one of
 *   `RENEWING` subscriptions (round robin), each with a license made by its checkout in `prepare`.
 *   The server verifies the signature, retrieves the subscription at the double (which renews it on
 *   each retrieve: its period moves on by one, so every event is a real renewal, not a replay of a
 *   state applied already), then in one durable unit records the event id, locks and compares the
 *   subscription's version, moves the license's expiry (license.updated, audit) and emits
 *   subscription.renewed.
 */
const double = new StripeDouble();
double.record = false;
double.renewOnRetrieve = true;
const json = { 'content-type': 'application/json' };
const runTag = Date.now().toString(36);
let serial = 0;
/** Connections made, by server base URL, for `request` (which cannot wait). */
const ready = new Map<string, { key: string; connectionId: string; secret: string }>();
/** Subscriptions the renewal events go round: more than the connections, so two events rarely meet on one. */
const RENEWING = 1000;

/** The double, started once for whichever scenarios run (each asks), stopped once. */
let started: Promise<unknown> | undefined;
async function startDouble() {
  started ??= double.start();
  await started;
  return {
    env: { STRIPE_API_URL: double.url },
    stop: async () => {
      if (started === undefined) return;
      started = undefined;
      await double.stop();
    },
  };
}

/** Per store run (server base URL): the Stripe connection, made once and shared by the scenarios. */
const connections = new Map<string, Promise<{ key: string; connectionId: string; secret: string }>>();

function connect({ baseUrl, fixture }: ScenarioContext) {
  let found = connections.get(baseUrl);
  if (!found) {
    found = (async () => {
      const key = double.account();
      const put = await fetch(`${baseUrl}/api/v1/payments/stripe`, { method: 'PUT', headers: authOf(fixture), body: JSON.stringify({ restrictedKey: key }) });
      if (!put.ok) throw new Error(`connecting Stripe: HTTP ${put.status} ${await put.text()}`);
      const endpoint = double.endpoints.get(((await put.json()) as { webhookEndpointId: string }).webhookEndpointId)!;
      return { key, connectionId: endpoint.url.split('/').pop()!, secret: endpoint.secret };
    })();
    connections.set(baseUrl, found);
  }
  return found;
}

const authOf = (fixture: ScenarioContext['fixture']) => ({ ...json, authorization: `Bearer ${fixture.apiKey}` });

async function mapPrice(ctx: ScenarioContext, body: Record<string, unknown>): Promise<void> {
  const map = await fetch(`${ctx.baseUrl}/api/v1/products/${ctx.fixture.productId}/prices`, { method: 'POST', headers: authOf(ctx.fixture), body: JSON.stringify(body) });
  if (!map.ok) throw new Error(`mapping the price: HTTP ${map.status} ${await map.text()}`);
}

/** A Stripe event as Stripe sends it: its body and Stripe-Signature header (made by the package). */
function signed(secret: string, id: string, type: string, object: unknown): { headers: Record<string, string>; body: string } {
  const payload = JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: Math.floor(Date.now() / 1000),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  });
  return { headers: { ...json, 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret }) }, body: payload };
}

async function connectAndMap(ctx: ScenarioContext): Promise<void> {
  const { key } = await connect(ctx);
  const price = double.price(key);
  double.anySession(key, [{ priceId: price, quantity: 1 }]);
  await mapPrice(ctx, { priceId: price, maxDevices: 2, licenseType: 'timed', offsetDays: 365 });
}

/** Per store run: the subscriptions the renewal events name, each with its license made by a checkout. */
const renewing = new Map<string, string[]>();

async function subscribeAll(ctx: ScenarioContext): Promise<void> {
  const c = await connect(ctx);
  const price = double.price(c.key);
  await mapPrice(ctx, { priceId: price, billing: 'subscription', licenseType: 'timed', maxDevices: 2 });
  const ids = Array.from({ length: RENEWING }, () => double.subscription(c.key, { items: [{ priceId: price }] }).id);
  const url = `${ctx.baseUrl}/api/v1/payments/stripe/webhook/${c.connectionId}`;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      const checkout = stripeObjects.subscriptionCheckout({ id: `cs_test_benchsub_${runTag}_${serial++}`, subscription: ids[i]!, email: `subscriber-${i}@example.com` });
      const res = await fetch(url, { method: 'POST', ...signed(c.secret, `evt_bench_sub_${runTag}_${serial++}`, 'checkout.session.completed', checkout) });
      if (!res.ok) throw new Error(`subscription checkout: HTTP ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  renewing.set(ctx.baseUrl, ids);
  // The checkouts queued a purchase e-mail each: sent before the renewals are measured, not during.
  await drained(ctx.baseUrl);
}

/** Waits (up to 5 minutes) until the server's outbox has no pending job. */
async function drained(baseUrl: string): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const text = await (await fetch(`${baseUrl}/metrics`)).text();
    const pending = [...text.matchAll(/^tessera_outbox_jobs\{[^}]*status="pending"[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    if (pending === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * A scenario that posts one new, correctly signed Stripe event per request to the connection's
 * webhook route, at issue 9's and 34's pace (300/s with p99 under 100 ms).
 */
function stripeEventScenario(name: string, prepare: (ctx: ScenarioContext) => Promise<void>, event: (baseUrl: string) => [id: string, type: string, object: unknown]): Scenario {
  return {
    name,
    distinct: true,
    pacedRate: 300,
    start: startDouble,
    async prepare(ctx) {
      await prepare(ctx);
      ready.set(ctx.baseUrl, await connect(ctx));
    },
    request: ({ baseUrl }) => ({
      method: 'POST',
      path: `/api/v1/payments/stripe/webhook/${ready.get(baseUrl)!.connectionId}`,
      setupRequest: (req) => ({ ...req, ...signed(ready.get(baseUrl)!.secret, ...event(baseUrl)) }),
    }),
    check: (status, body) => (status === 200 && (body as { received?: unknown }).received === true ? undefined : `HTTP ${status}: ${JSON.stringify(body)}`),
  };
}

export const paymentScenarios: Scenario[] = [
  stripeEventScenario('stripe purchase', connectAndMap, () => {
    const session = `cs_test_bench_${runTag}_${serial++}`;
    return [`evt_bench_${runTag}_${serial}`, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: `buyer-${serial % 1000}@example.com` })];
  }),
  stripeEventScenario('stripe renewal', subscribeAll, (baseUrl) => {
    const ids = renewing.get(baseUrl)!;
    const invoice = stripeObjects.subscriptionInvoice({ subscription: ids[serial % ids.length]!, status: 'paid' });
    return [`evt_bench_renew_${runTag}_${serial++}`, 'invoice.paid', invoice];
  }),
];

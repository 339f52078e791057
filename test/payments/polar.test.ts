import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { licensesOf, rowCount } from '../support/payments.ts';
import { PolarDouble, type PolarDoubleOrder, polarObjects, polarSignedEvent } from '../support/polar-double.ts';
import { forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

interface PolarConnected {
  token: string;
  organizationId: string;
  connectionId: string;
  endpointId: string;
  secret: string;
}

/** A test app whose @polar-sh/sdk talks to a Polar double on loopback (POLAR_API_URL). */
function usePolarApp(kind: Parameters<typeof useTestApp>[0]): { ctx: TestContext; double: PolarDouble } {
  const double = new PolarDouble();
  const env: Record<string, string> = {};
  beforeAll(async () => {
    await double.start();
    env.POLAR_API_URL = double.url;
  });
  const ctx = useTestApp(kind, { env });
  afterAll(() => double.stop());
  return { ctx, double };
}

async function connectPolar(ctx: TestContext, double: PolarDouble, t: Tenant, org = double.organization()): Promise<PolarConnected> {
  const res = await call(ctx, { method: 'PUT', url: '/api/v1/payments/polar', headers: t.auth, json: { accessToken: org.token, organizationId: org.organizationId, sandbox: true } });
  if (res.status !== 200) throw new Error(`connect: ${res.status} ${JSON.stringify(res.body)}`);
  const endpoint = double.endpoints.get(res.body.webhookEndpointId)!;
  return { ...org, connectionId: endpoint.url.split('/').pop()!, endpointId: res.body.webhookEndpointId, secret: endpoint.secret };
}

function deliver(ctx: TestContext, connectionId: string, signed: { payload: string; headers: Record<string, string> }) {
  return call(ctx, { method: 'POST', url: `/api/v1/payments/polar/webhook/${connectionId}`, headers: { 'content-type': 'application/json', ...signed.headers }, payload: signed.payload });
}

function sendOrder(ctx: TestContext, double: PolarDouble, c: PolarConnected, type: 'order.paid' | 'order.refunded', order: PolarDoubleOrder, id?: string) {
  const sub = order.subscriptionId ? double.subscriptionOf(c.token, order.subscriptionId) : undefined;
  return deliver(ctx, c.connectionId, polarSignedEvent(c.secret, type, polarObjects.order(order, c.organizationId, undefined, sub), { id }));
}

function sendSubscription(ctx: TestContext, double: PolarDouble, c: PolarConnected, type: string, subscriptionId: string) {
  return deliver(ctx, c.connectionId, polarSignedEvent(c.secret, type, polarObjects.subscription(double.subscriptionOf(c.token, subscriptionId), c.organizationId)));
}

async function mapProduct(ctx: TestContext, t: Tenant, productId: string, body: Record<string, unknown>) {
  return call(ctx, { method: 'POST', url: `/api/v1/products/${productId}/prices`, headers: t.auth, json: { provider: 'polar', maxDevices: 1, licenseType: 'perpetual', ...body } });
}

async function licenseView(ctx: TestContext, t: Tenant, key: string) {
  return (await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': key } })).body;
}

forEachStore('payments: Polar', (kind) => {
  const { ctx, double } = usePolarApp(kind);

  describe('connection', () => {
    it('connects with one call: the token checked, the endpoint created at Polar with the handled events, secrets sealed', async () => {
      const t = await createTenant(ctx);
      const c = await connectPolar(ctx, double, t);
      const endpoint = double.endpoints.get(c.endpointId)!;
      expect(endpoint.url).toMatch(new RegExp(`/api/v1/payments/polar/webhook/pc_`));
      expect(endpoint.events).toEqual(expect.arrayContaining(['order.paid', 'order.refunded', 'subscription.updated', 'subscription.revoked']));
      // An organization token acts for its own organization: no organization_id is sent beside it.
      expect(double.requests.find((r) => r.method === 'POST' && r.path === '/v1/webhooks/endpoints' && r.token === c.token)!.body).not.toHaveProperty('organization_id');
      const got = await call(ctx, { method: 'GET', url: '/api/v1/payments/polar', headers: t.auth });
      expect(got.body).toMatchObject({ connected: true, livemode: false, webhookEndpointId: c.endpointId });
      const rows = await ctx.store.read.all(ctx.store.db.selectFrom('payment_connections').selectAll().where('account_id', '=', t.accountId));
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows[0])).not.toContain(c.token);
      expect(JSON.stringify(rows[0])).not.toContain(c.secret);
      // Stripe's connection is another one.
      expect((await call(ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth })).body).toEqual({ connected: false });
    });

    it('a personal access token names the organization when it creates the endpoint', async () => {
      const t = await createTenant(ctx);
      const c = await connectPolar(ctx, double, t, double.organization({ personal: true }));
      expect(double.requests.find((r) => r.method === 'POST' && r.path === '/v1/webhooks/endpoints' && r.token === c.token)!.body).toMatchObject({ organization_id: c.organizationId });
    });

    it('a refused token, an organization the token cannot see, or bad input: 400, nothing stored', async () => {
      const t = await createTenant(ctx);
      const before = await rowCount(ctx.store, 'payment_connections');
      const org = double.organization();
      const refused = await call(ctx, { method: 'PUT', url: '/api/v1/payments/polar', headers: t.auth, json: { accessToken: 'polar_oat_revoked123', organizationId: org.organizationId } });
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('invalid_provider_key');
      const other = double.organization();
      const wrongOrg = await call(ctx, { method: 'PUT', url: '/api/v1/payments/polar', headers: t.auth, json: { accessToken: org.token, organizationId: other.organizationId } });
      expect(wrongOrg.status).toBe(400);
      expect(wrongOrg.body.error.code).toBe('invalid_provider_key');
      for (const json of [{ accessToken: org.token }, { accessToken: 'sk_test_123456', organizationId: org.organizationId }, { accessToken: org.token, organizationId: 'nope' }, { accessToken: org.token, organizationId: org.organizationId, sandbox: 'yes' }]) {
        const res = await call(ctx, { method: 'PUT', url: '/api/v1/payments/polar', headers: t.auth, json });
        expect(res.status, JSON.stringify(json)).toBe(400);
      }
      expect(await rowCount(ctx.store, 'payment_connections')).toBe(before);
      expect([...double.endpoints.values()].some((e) => e.token === org.token)).toBe(false);
    });

    it('Polar down: 502 provider_unavailable, nothing stored', async () => {
      const t = await createTenant(ctx);
      const before = await rowCount(ctx.store, 'payment_connections');
      double.fail(503, 1);
      const res = await call(ctx, { method: 'PUT', url: '/api/v1/payments/polar', headers: t.auth, json: { ...(({ token, organizationId }) => ({ accessToken: token, organizationId }))(double.organization()) } });
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe('provider_unavailable');
      expect(await rowCount(ctx.store, 'payment_connections')).toBe(before);
    });

    it('a reconnect deletes the old endpoint; disconnect deletes the endpoint and forgets the token', async () => {
      const t = await createTenant(ctx);
      const org = double.organization();
      const first = await connectPolar(ctx, double, t, org);
      const second = await connectPolar(ctx, double, t, org);
      await expect.poll(() => double.endpoints.has(first.endpointId), { timeout: 5000 }).toBe(false);
      expect(double.endpoints.has(second.endpointId)).toBe(true);
      expect((await call(ctx, { method: 'DELETE', url: '/api/v1/payments/polar', headers: t.auth })).status).toBe(200);
      expect(double.endpoints.has(second.endpointId)).toBe(false);
      expect((await call(ctx, { method: 'GET', url: '/api/v1/payments/polar', headers: t.auth })).body).toEqual({ connected: false });
    });

    it("another account sees its own connection only, and cannot map this account's Polar product (its token does not see it)", async () => {
      const a = await createTenant(ctx);
      const b = await createTenant(ctx);
      const ca = await connectPolar(ctx, double, a);
      const cb = await connectPolar(ctx, double, b);
      expect((await call(ctx, { method: 'GET', url: '/api/v1/payments/polar', headers: b.auth })).body.webhookEndpointId).toBe(cb.endpointId);
      const product = await createProduct(ctx, b);
      expect((await mapProduct(ctx, b, product.id, { priceId: double.addProduct(ca.token) })).status).toBe(400);
    });
  });

  describe('mappings', () => {
    it('maps a Polar product id, checked at Polar; unknown products, no connection: 400', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const unconnected = await mapProduct(ctx, t, product.id, { priceId: '0f8b1c9e-0000-4000-8000-000000000000' });
      expect(unconnected.status).toBe(400);
      expect(unconnected.body.error.code).toBe('payments_not_connected');
      const c = await connectPolar(ctx, double, t);
      const productId = double.addProduct(c.token);
      const ok = await mapProduct(ctx, t, product.id, { priceId: productId, maxDevices: 2 });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ provider: 'polar', priceId: productId, productId: product.id, maxDevices: 2 });
      const missing = await mapProduct(ctx, t, product.id, { priceId: '0f8b1c9e-0000-4000-8000-000000000000' });
      expect(missing.status).toBe(400);
      expect((await mapProduct(ctx, t, product.id, { provider: 'paddle', priceId: productId })).status).toBe(400);
      expect(await rowCount(ctx.store, 'price_mappings')).toBeGreaterThan(0);
      const list = await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth });
      expect(list.body).toHaveLength(1);
    });
  });

  describe('orders', () => {
    async function shop(o: { maxDevices?: number } = {}) {
      const t = await createTenant(ctx);
      const c = await connectPolar(ctx, double, t);
      const product = await createProduct(ctx, t);
      const polarProduct = double.addProduct(c.token);
      expect((await mapProduct(ctx, t, product.id, { priceId: polarProduct, maxDevices: o.maxDevices ?? 1 })).status).toBe(200);
      return { t, c, product, polarProduct };
    }

    it('signatures: good accepted; wrong, missing and stale refused with 400 invalid_signature, nothing stored', async () => {
      const { t, c, polarProduct } = await shop();
      const order = double.addOrder(c.token, { productId: polarProduct, email: `sig-${Date.now()}@example.com` });
      const data = polarObjects.order(order, c.organizationId);
      const wrong = polarSignedEvent('polar_whs_wrong', 'order.paid', data);
      const stale = polarSignedEvent(c.secret, 'order.paid', data, { timestamp: Date.now() - 10 * 60_000 });
      const future = polarSignedEvent(c.secret, 'order.paid', data, { timestamp: Date.now() + 10 * 60_000 });
      const good = polarSignedEvent(c.secret, 'order.paid', data);
      const { 'webhook-signature': _, ...unsigned } = good.headers;
      for (const [name, delivery] of [['wrong', wrong], ['stale', stale], ['future', future], ['missing', { payload: good.payload, headers: unsigned }], ['tampered', { ...good, payload: good.payload.replace('4900', '1') }]] as const) {
        const res = await deliver(ctx, c.connectionId, delivery);
        expect(res.status, name).toBe(400);
        expect(res.body.error.code, name).toBe('invalid_signature');
      }
      expect(await licensesOf(ctx.store, t.accountId)).toHaveLength(0);
      expect((await deliver(ctx, c.connectionId, good)).status).toBe(200);
      expect(await licensesOf(ctx.store, t.accountId)).toHaveLength(1);
    });

    it("order.paid: the purchase records the order's total and currency; its invoice is Polar's PDF", async () => {
      const { t, c, polarProduct } = await shop();
      const order = double.addOrder(c.token, { productId: polarProduct, email: `buyer-${Date.now()}@example.com` });
      expect((await sendOrder(ctx, double, c, 'order.paid', order)).status).toBe(200);
      const purchases = await call(ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
      expect(purchases.body.data).toMatchObject([{ provider: 'polar', sessionId: order.id, amountTotal: 4900, currency: 'usd', hasInvoice: true }]);
      const invoice = await call(ctx, { method: 'GET', url: `/api/v1/payments/purchases/${purchases.body.data[0].id}/invoice`, headers: t.auth });
      expect(invoice.body).toEqual({ invoicePdf: `https://polar-invoices.example/${order.id}.pdf`, hostedInvoiceUrl: null });
    });

    it('Polar down while an order is fulfilled: 500 (Polar delivers it again), nothing stored; the redelivery fulfils', async () => {
      const { t, c, polarProduct } = await shop();
      const order = double.addOrder(c.token, { productId: polarProduct });
      const signed = polarSignedEvent(c.secret, 'order.paid', polarObjects.order(order, c.organizationId));
      double.fail(503, 1);
      expect((await deliver(ctx, c.connectionId, signed)).status).toBe(500);
      expect(await licensesOf(ctx.store, t.accountId)).toHaveLength(0);
      expect((await deliver(ctx, c.connectionId, signed)).status).toBe(200);
      expect(await licensesOf(ctx.store, t.accountId)).toHaveLength(1);
    });

    it('events of types it does not handle are answered 200 and ignored', async () => {
      const { t, c } = await shop();
      expect((await deliver(ctx, c.connectionId, polarSignedEvent(c.secret, 'checkout.created', { id: 'x' }))).status).toBe(200);
      expect(await licensesOf(ctx.store, t.accountId)).toHaveLength(0);
    });

    it('a renewal checkout (metadata tessera_license_key) applies the offer to that license', async () => {
      const { t, c, product, polarProduct } = await shop();
      const license = (await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json: { productId: product.id, type: 'timed', expiresAt: new Date(Date.now() + 5 * DAY).toISOString(), maxDevices: 1, email: 'renew@example.com' } })).body;
      const renewalProduct = double.addProduct(c.token);
      const offer = await call(ctx, { method: 'POST', url: `/api/v1/products/${product.id}/offers`, headers: t.auth, json: { kind: 'renewal', name: 'One more year', priceId: renewalProduct, provider: 'polar', extendDays: 365 } });
      expect(offer.status).toBe(200);
      expect(offer.body).toMatchObject({ provider: 'polar', priceId: renewalProduct });
      // The portal's offer button opens a Polar checkout carrying the license key to the order.
      const url = await ctx.services.payments.offerCheckout({ accountId: t.accountId, email: 'renew@example.com' }, license.key, offer.body.id, 'https://portal.example/p');
      expect(url).toMatch(/^https:\/\/sandbox\.polar\.sh\/checkout\//);
      expect(double.requests.at(-1)).toMatchObject({ path: '/v1/checkouts/', body: { products: [renewalProduct], customer_email: 'renew@example.com', metadata: { tessera_license_key: license.key, tessera_offer_id: offer.body.id } } });
      const order = double.addOrder(c.token, { productId: renewalProduct, metadata: { tessera_license_key: license.key } });
      await sendOrder(ctx, double, c, 'order.paid', order);
      expect(new Date((await licenseView(ctx, t, license.key)).expiresAt).getTime()).toBeGreaterThan(Date.now() + 300 * DAY);
    });
  });

  it("the portal's CSP lets its forms redirect to Polar's checkout and customer portal", async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/portal/request' });
    expect(res.statusCode).toBe(200);
    expect(String(res.headers['content-security-policy'])).toMatch(/form-action[^;]*https:\/\/polar\.sh https:\/\/sandbox\.polar\.sh/);
  });

  describe('subscriptions', () => {
    async function subscribed(o: { graceDays?: number; seats?: number } = {}) {
      const t = await createTenant(ctx);
      const c = await connectPolar(ctx, double, t);
      const product = await createProduct(ctx, t);
      const polarProduct = double.addProduct(c.token, { recurring: true });
      expect((await mapProduct(ctx, t, product.id, { priceId: polarProduct, billing: 'subscription', licenseType: 'timed', maxDevices: 2, graceDays: o.graceDays ?? 7 })).status).toBe(200);
      const sub = double.addSubscription(c.token, { productId: polarProduct, seats: o.seats ?? null });
      const email = `sub-${Date.now()}-${Math.random()}@example.com`;
      const order = double.addOrder(c.token, { productId: polarProduct, subscriptionId: sub.id, billingReason: 'subscription_create', email });
      return { t, c, product, polarProduct, sub, order, email };
    }
    const only = async (t: Tenant) => {
      const rows = await licensesOf(ctx.store, t.accountId);
      expect(rows).toHaveLength(1);
      return licenseView(ctx, t, rows[0]!.key);
    };

    it('trialing: the trial end + graceDays; once active, the period end + graceDays', async () => {
      const s = await subscribed({ graceDays: 2 });
      const sub = double.subscriptionOf(s.c.token, s.sub.id);
      sub.status = 'trialing';
      sub.trialStart = sub.currentPeriodStart;
      sub.trialEnd = sub.currentPeriodStart + 14 * DAY;
      await sendOrder(ctx, double, s.c, 'order.paid', s.order);
      let view = await only(s.t);
      expect(view.expiresAt).toBe(new Date(sub.trialEnd + 2 * DAY).toISOString());
      expect(view.subscription.status).toBe('trialing');
      sub.status = 'active';
      await sendSubscription(ctx, double, s.c, 'subscription.active', sub.id);
      view = await only(s.t);
      expect(view.expiresAt).toBe(new Date(sub.currentPeriodEnd + 2 * DAY).toISOString());
    });

    it('subscription.past_due e-mails where to pay, once; no second license', async () => {
      const s = await subscribed({ graceDays: 2 });
      await sendOrder(ctx, double, s.c, 'order.paid', s.order);
      const sub = double.subscriptionOf(s.c.token, s.sub.id);
      sub.status = 'past_due';
      expect((await sendSubscription(ctx, double, s.c, 'subscription.past_due', sub.id)).status).toBe(200);
      const mails = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('payload').where('kind', '=', 'mail'));
      expect(mails.filter((m) => JSON.parse(m.payload).kind === 'payment_failed' && JSON.parse(m.payload).to === 'buyer@example.com')).toHaveLength(1);
      await only(s.t);
    });

    it('the portal link: a Polar customer session for the subscription\'s customer', async () => {
      const s = await subscribed();
      await sendOrder(ctx, double, s.c, 'order.paid', s.order);
      const url = await ctx.services.payments.billingPortal({ accountId: s.t.accountId, email: s.email }, (await licensesOf(ctx.store, s.t.accountId))[0]!.key, 'https://portal.example/back');
      expect(url).toMatch(/^https:\/\/sandbox\.polar\.sh\/acme\/portal\?customer_session_token=/);
      expect(double.requests.at(-1)!.body).toMatchObject({ customer_id: s.sub.customerId, return_url: 'https://portal.example/back' });
    });
  });
});

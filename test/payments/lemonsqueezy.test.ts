import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, type Tenant } from '../support/app.ts';
import { type LsConnected, connectLemonSqueezy, deliverLs, useLemonSqueezyApp } from '../support/lemonsqueezy-double.ts';
import { outboxFor } from '../support/mail.ts';
import { licensesOf, purchaseMailsTo, rowCount } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

forEachStore('payments: Lemon Squeezy', (kind) => {
  const p = useLemonSqueezyApp(kind);
  const { double } = p;
  let n = 0;
  const emailOf = () => `ls-buyer${++n}-${Date.now()}@example.com`;

  async function mapVariant(t: Tenant, productId: string, body: Record<string, unknown>) {
    const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${productId}/prices`, headers: t.auth, json: { provider: 'lemonsqueezy', maxDevices: 1, licenseType: 'perpetual', ...body } });
    if (res.status !== 200) throw new Error(`map: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** A tenant connected to a store with a product and one mapped one-time variant. */
  async function shop(maxDevices = 2) {
    const t = await createTenant(p.ctx);
    const c = await connectLemonSqueezy(p, t);
    const product = await createProduct(p.ctx, t);
    const variant = double.variant(c.storeId);
    await mapVariant(t, product.id, { priceId: variant, maxDevices });
    return { t, c, productId: product.id, variant };
  }

  /** A tenant connected to a store with one mapped subscription variant. */
  async function subscriptionShop() {
    const t = await createTenant(p.ctx);
    const c = await connectLemonSqueezy(p, t);
    const product = await createProduct(p.ctx, t);
    const variant = double.variant(c.storeId, { subscription: true });
    await mapVariant(t, product.id, { priceId: variant, billing: 'subscription', licenseType: 'timed', maxDevices: 2 });
    return { t, c, variant };
  }

  const orderEvent = (c: LsConnected, order: ReturnType<typeof double.order>, name = 'order_created', custom?: Record<string, string>) => double.event(c.secret, name, double.orderResource(order), custom);

  it('connects with the key and store: webhook created at Lemon Squeezy, secrets sealed, GET shows it; another tenant sees none', async () => {
    const t = await createTenant(p.ctx);
    const account = double.account();
    const res = await call(p.ctx, { method: 'PUT', url: '/api/v1/payments/lemonsqueezy', headers: t.auth, json: account });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ connected: true, livemode: false, webhookEndpointId: expect.any(String), connectedAt: expect.any(String) });
    const webhook = double.webhooks.get(res.body.webhookEndpointId)!;
    expect(webhook.url).toMatch(/\/api\/v1\/payments\/lemonsqueezy\/webhook\/[A-Za-z0-9_]+$/);
    const row = await p.ctx.store.read.first(p.ctx.store.db.selectFrom('payment_connections').selectAll().where('account_id', '=', t.accountId));
    expect(JSON.stringify(row)).not.toContain(account.apiKey);
    expect(JSON.stringify(row)).not.toContain(webhook.secret);
    expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/lemonsqueezy', headers: t.auth })).body).toMatchObject({ connected: true, webhookEndpointId: webhook.id });
    const other = await createTenant(p.ctx);
    expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/lemonsqueezy', headers: other.auth })).body).toEqual({ connected: false });
  });

  it('a refused key or a store of another key is a 400, Lemon Squeezy down a 502, bad input a 400: nothing stored', async () => {
    const t = await createTenant(p.ctx);
    const before = await rowCount(p.ctx.store, 'payment_connections');
    const put = (json: unknown) => call(p.ctx, { method: 'PUT', url: '/api/v1/payments/lemonsqueezy', headers: t.auth, json });
    const refused = await put({ apiKey: 'not_a_real_key_123', storeId: double.account().storeId });
    expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_provider_key']);
    const otherStore = await put({ apiKey: double.account().apiKey, storeId: double.account().storeId });
    expect([otherStore.status, otherStore.body.error.code]).toEqual([400, 'invalid_request']);
    for (const json of [{ apiKey: double.account().apiKey }, { apiKey: 'x', storeId: '1' }, { apiKey: double.account().apiKey, storeId: 'abc' }]) {
      expect((await put(json)).status).toBe(400);
    }
    double.failWith = 503;
    try {
      const down = await put(double.account());
      expect([down.status, down.body.error.code]).toEqual([502, 'provider_unavailable']);
    } finally {
      double.failWith = null;
    }
    expect(await rowCount(p.ctx.store, 'payment_connections')).toBe(before);
  });

  it('reconnecting replaces the connection and deletes the old webhook (with the old key); disconnecting deletes the webhook and forgets the keys', async () => {
    const t = await createTenant(p.ctx);
    const first = await connectLemonSqueezy(p, t);
    const second = await connectLemonSqueezy(p, t);
    expect(second.connectionId).not.toBe(first.connectionId);
    await expect.poll(() => [...double.webhooks.values()].some((w) => w.secret === first.secret), { timeout: 10_000 }).toBe(false);
    expect(double.requests.filter((r) => r.method === 'DELETE').at(-1)!.key).toBe(first.apiKey);
    const old = await deliverLs(p.ctx, first.connectionId, orderEvent(first, double.order(first.storeId, { variantId: double.variant(first.storeId), email: emailOf() })));
    expect(old.status).toBe(404);
    const res = await call(p.ctx, { method: 'DELETE', url: '/api/v1/payments/lemonsqueezy', headers: t.auth });
    expect(res.status).toBe(200);
    expect([...double.webhooks.values()].some((w) => w.secret === second.secret)).toBe(false);
    expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/lemonsqueezy', headers: t.auth })).body).toEqual({ connected: false });
  });

  it('X-Signature: good is 200; wrong, missing, or another secret is a 400 invalid_signature; a signed non-event a 400 invalid_request; nothing made', async () => {
    const { t, c, variant } = await shop();
    const event = orderEvent(c, double.order(c.storeId, { variantId: variant, email: emailOf() }));
    const cases: Record<string, Record<string, string>> = {
      wrong: { ...event.headers, 'x-signature': 'ab'.repeat(32) },
      missing: { 'x-event-name': 'order_created' },
      notHex: { ...event.headers, 'x-signature': 'zz' },
      otherSecret: double.event('another_secret', 'order_created', JSON.parse(event.body).data).headers,
    };
    for (const [name, headers] of Object.entries(cases)) {
      const res = await deliverLs(p.ctx, c.connectionId, { body: event.body, headers });
      expect([res.status, res.body.error?.code], name).toEqual([400, 'invalid_signature']);
    }
    expect(await licensesOf(p.ctx.store, t.accountId)).toEqual([]);
    const { createHmac } = await import('node:crypto');
    const junk = '{"meta":{}}';
    const notEvent = await deliverLs(p.ctx, c.connectionId, { body: junk, headers: { 'x-signature': createHmac('sha256', c.secret).update(junk).digest('hex') } });
    expect([notEvent.status, notEvent.body.error?.code]).toEqual([400, 'invalid_request']);
    expect((await deliverLs(p.ctx, c.connectionId, event)).status).toBe(200);
    expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
  });

  it("order_created: the purchase records the order's total, currency and receipt (the invoice), read from its attributes", async () => {
    const { t, c, variant } = await shop(2);
    const order = double.order(c.storeId, { variantId: variant, email: emailOf(), total: 9900 });
    expect((await deliverLs(p.ctx, c.connectionId, orderEvent(c, order))).status).toBe(200);
    const purchases = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
    expect(purchases.body.data).toMatchObject([{ provider: 'lemonsqueezy', sessionId: order.id, amountTotal: 9900, currency: 'usd', hasInvoice: true }]);
    const invoice = await call(p.ctx, { method: 'GET', url: `/api/v1/payments/purchases/${purchases.body.data[0].id}/invoice`, headers: t.auth });
    expect(invoice.body.hostedInvoiceUrl).toContain(`/my-orders/${order.id}`);
  });

  it('an order kept unmapped, once its variant is mapped, is fulfilled by reading the order items at Lemon Squeezy again', async () => {
    const { t, c, productId } = await shop();
    const later = double.variant(c.storeId);
    const email = emailOf();
    const order = double.order(c.storeId, { variantId: later, email });
    await deliverLs(p.ctx, c.connectionId, orderEvent(c, order));
    const listed = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
    const purchase = listed.body.data.find((x: { sessionId: string }) => x.sessionId === order.id);
    expect(purchase).toMatchObject({ status: 'unmapped', licenseKeys: [] });
    await mapVariant(t, productId, { priceId: later, maxDevices: 4 });
    const fulfilled = await call(p.ctx, { method: 'POST', url: `/api/v1/payments/purchases/${purchase.id}/fulfil`, headers: t.auth });
    expect(fulfilled.body).toMatchObject({ status: 'fulfilled', licenseKeys: [expect.any(String)] });
    expect((await licensesOf(p.ctx.store, t.accountId)).map((l) => l.max_devices)).toEqual([4]);
    expect(await purchaseMailsTo(p.ctx.store, email)).toBe(1);
  });

  it('mappings: a variant must exist in the connected store (400 otherwise) and is listed with its provider', async () => {
    const { t, c, productId, variant } = await shop();
    const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${productId}/prices`, headers: t.auth });
    expect(list.body).toMatchObject([{ provider: 'lemonsqueezy', priceId: variant }]);
    const otherStore = double.variant(double.account().storeId);
    const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${productId}/prices`, headers: t.auth, json: { provider: 'lemonsqueezy', priceId: otherStore, maxDevices: 1, licenseType: 'perpetual' } });
    expect(res.status).toBe(400);
    const unconnected = await createTenant(p.ctx);
    const product = await createProduct(p.ctx, unconnected);
    const none = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: unconnected.auth, json: { provider: 'lemonsqueezy', priceId: double.variant(c.storeId), maxDevices: 1, licenseType: 'perpetual' } });
    expect([none.status, none.body.error.code]).toEqual([400, 'payments_not_connected']);
  });

  it("a renewal offer sold through Lemon Squeezy: the portal's checkout carries the license key as custom data; its order renews that license, once", async () => {
    const { t, c, productId } = await shop();
    const variant = double.variant(c.storeId);
    const created = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${productId}/offers`, headers: t.auth, json: { kind: 'renewal', name: '1 year', priceId: variant, provider: 'lemonsqueezy', extendDays: 365 } });
    expect(created.status).toBe(200);
    const expiry = Date.now() + 10 * DAY;
    const license = await createLicense(p.ctx, t, productId, { type: 'timed', expiresAt: new Date(expiry).toISOString(), email: 'owner@example.com' });
    const url = await p.ctx.services.payments.offerCheckout({ email: 'owner@example.com', accountId: t.accountId }, license.key, created.body.id, 'https://portal.example/portal');
    expect(url).toMatch(new RegExp(`^https://store-${c.storeId}\\.lemonsqueezy\\.com/checkout/`));
    const checkout = double.checkouts.at(-1)!;
    expect(checkout).toMatchObject({ variantId: variant, email: 'owner@example.com', custom: { tessera_license_key: license.key, tessera_offer_id: created.body.id } });
    const order = double.order(c.storeId, { variantId: variant, email: 'owner@example.com' });
    const event = orderEvent(c, order, 'order_created', checkout.custom);
    const answers = await Promise.all(Array.from({ length: 5 }, () => deliverLs(p.ctx, c.connectionId, event)));
    expect(answers.map((a) => a.status)).toEqual(Array(5).fill(200));
    const view = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } });
    expect(Date.parse(view.body.expiresAt)).toBe(expiry + 365 * DAY);
    const purchases = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
    expect(purchases.body.data.find((x: { sessionId: string }) => x.sessionId === order.id)).toMatchObject({ kind: 'renewal', status: 'fulfilled', licenseKeys: [license.key] });
  });

  it("the portal's pages let their forms go on to Lemon Squeezy's checkout and customer portal (each store's own subdomain)", async () => {
    const res = await call(p.ctx, { method: 'GET', url: '/portal' });
    expect(String(res.headers['content-security-policy'])).toMatch(/form-action [^;]*https:\/\/\*\.lemonsqueezy\.com/);
  });

  it("a subscription's first order makes no license of its own, even when Lemon Squeezy does not show the subscription yet: subscription_created makes the one linked license", async () => {
    const { t, c, variant } = await subscriptionShop();
    // order_created first, its subscription not created yet at Lemon Squeezy (a plain order of the subscription variant).
    const early = double.order(c.storeId, { variantId: variant, email: emailOf() });
    expect((await deliverLs(p.ctx, c.connectionId, orderEvent(c, early))).status).toBe(200);
    expect(await licensesOf(p.ctx.store, t.accountId)).toEqual([]);
    const { sub } = double.subscription(c.storeId, { variantId: variant, email: emailOf() });
    expect((await deliverLs(p.ctx, c.connectionId, double.event(c.secret, 'subscription_created', double.subscriptionResource(sub)))).status).toBe(200);
    expect((await licensesOf(p.ctx.store, t.accountId)).length).toBe(1);
  });

  it('subscription_payment_failed e-mails the subscriber where to pay, once per event, and changes no license', async () => {
    const { t, c, variant } = await subscriptionShop();
    const email = emailOf();
    const { sub, order } = double.subscription(c.storeId, { variantId: variant, email });
    for (const [name, data] of [['order_created', double.orderResource(order)], ['subscription_created', double.subscriptionResource(sub)]] as const) {
      expect((await deliverLs(p.ctx, c.connectionId, double.event(c.secret, name, data))).status).toBe(200);
    }
    const before = await licensesOf(p.ctx.store, t.accountId);
    expect(before).toHaveLength(1);
    sub.status = 'past_due';
    const mailsBefore = (await outboxFor(p.ctx.store, email)).length;
    const failed = double.event(c.secret, 'subscription_payment_failed', double.invoiceResource(sub, 'failed'));
    for (let i = 0; i < 2; i++) expect((await deliverLs(p.ctx, c.connectionId, failed)).status).toBe(200);
    expect((await outboxFor(p.ctx.store, email)).length).toBe(mailsBefore + 1);
    expect(await licensesOf(p.ctx.store, t.accountId)).toEqual(before);
  });
});

import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { call, createProduct, createTenant } from '../support/app.ts';
import { connectStripe, deliver, licensesOf, mapPrice, rowCount, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { signedEvent, stripeObjects } from '../support/stripe-double.ts';

forEachStore('payments (security)', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  async function sold() {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t);
    const price = double.price(c.key);
    await mapPrice(p, t, product.id, { priceId: price });
    const session = double.session(c.key, [{ priceId: price }]);
    return { t, c, product, price, session, object: stripeObjects.checkoutSession({ id: session, email: `sec-${Date.now()}@example.com`, invoice: double.invoice(c.key) }) };
  }

  describe('signatures', () => {
    it('missing, wrong, too old, or made with another connection\'s secret: 400 invalid_signature and nothing happens', async () => {
      const { t, c, object } = await sold();
      const other = await connectStripe(p, await createTenant(p.ctx));
      const good = signedEvent(c.secret, 'checkout.session.completed', object);
      const now = Math.floor(Date.now() / 1000);
      const tampered = { payload: good.payload.replace('"paid"', '"no_payment_required"'), header: good.header };
      const cases = {
        missing: { payload: good.payload },
        empty: { payload: good.payload, header: '' },
        garbage: { payload: good.payload, header: 't=1,v1=deadbeef' },
        wrongSecret: signedEvent('whsec_notthesecret', 'checkout.session.completed', object),
        otherConnection: signedEvent(other.secret, 'checkout.session.completed', object),
        tooOld: signedEvent(c.secret, 'checkout.session.completed', object, { timestamp: now - 301 }),
        tampered,
      };
      for (const [name, event] of Object.entries(cases)) {
        const res = await deliver(p.ctx, c.connectionId, event);
        expect(res.status, name).toBe(400);
        expect(res.body.error.code, name).toBe('invalid_signature');
      }
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
      // Within the 300 s tolerance it passes.
      expect((await deliver(p.ctx, c.connectionId, signedEvent(c.secret, 'checkout.session.completed', object, { timestamp: now - 290 }))).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
    });

    it('an unknown connection is a 404; a non-JSON body with a valid signature is a 400', async () => {
      const { c } = await sold();
      const res = await deliver(p.ctx, 'pc_doesnotexist', signedEvent(c.secret, 'checkout.session.completed', {}));
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      const payload = 'not json';
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: c.secret });
      const bad = await deliver(p.ctx, c.connectionId, { payload, header });
      expect(bad.status).toBe(400);
      // Without a body: the same order of checks (connection, then signature, then the event).
      const bodiless = (connectionId: string, header?: string) =>
        p.ctx.app.inject({ method: 'POST', url: `/api/v1/payments/stripe/webhook/${connectionId}`, headers: header === undefined ? {} : { 'stripe-signature': header } });
      expect((await bodiless('pc_doesnotexist')).statusCode).toBe(404);
      const unsigned = await bodiless(c.connectionId);
      expect([unsigned.statusCode, unsigned.json().error.code]).toEqual([400, 'invalid_signature']);
      const signedEmpty = await bodiless(c.connectionId, Stripe.webhooks.generateTestHeaderString({ payload: '', secret: c.secret }));
      expect([signedEmpty.statusCode, signedEmpty.json().error.code]).toEqual([400, 'invalid_request']);
    });

    it('a signed event larger than the JSON limit (64 KiB) but within 256 KiB is taken', async () => {
      const { t, c, object } = await sold();
      const big = { ...object, metadata: { note: 'x'.repeat(100 * 1024) } };
      expect((await send(p.ctx, c, 'checkout.session.completed', big)).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
    });

    it('bodies over the limit are a 413 before anything is read', async () => {
      const { c } = await sold();
      const payload = JSON.stringify({ filler: 'x'.repeat(300 * 1024) });
      const res = await deliver(p.ctx, c.connectionId, { payload, header: Stripe.webhooks.generateTestHeaderString({ payload, secret: c.secret }) });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('payload_too_large');
    });

    it('the answer carries no internals on failure', async () => {
      const { c, object } = await sold();
      double.fail(500);
      try {
        const res = await send(p.ctx, c, 'checkout.session.completed', object);
        expect(res.status).toBe(500);
        expect(res.raw.body).not.toMatch(/at .*\.ts|stack|SELECT|INSERT/i);
      } finally {
        double.heal();
      }
    });
  });

  describe('tenant isolation', () => {
    it("another account sees nothing of a tenant's connection, mappings, purchases or invoices, and cannot map its products", async () => {
      const a = await sold();
      await send(p.ctx, a.c, 'checkout.session.completed', a.object);
      const purchase = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: a.t.auth })).body.data[0];
      expect(purchase.status).toBe('fulfilled');

      const b = await createTenant(p.ctx);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: b.auth })).body).toEqual({ connected: false });
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: b.auth })).body).toEqual({ data: [], nextCursor: null });
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/payments/purchases/${purchase.id}/invoice`, headers: b.auth })).status).toBe(404);
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${a.product.id}/prices`, headers: b.auth })).status).toBe(404);
      expect((await call(p.ctx, { method: 'DELETE', url: `/api/v1/products/${a.product.id}/prices/${a.price}`, headers: b.auth })).status).toBe(404);
      const bc = await connectStripe(p, b);
      const mapOther = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${a.product.id}/prices`, headers: b.auth, json: { priceId: double.price(bc.key), maxDevices: 1, licenseType: 'perpetual' } });
      expect(mapOther.status).toBe(404);
      // B's disconnect leaves A's connection alone.
      await call(p.ctx, { method: 'DELETE', url: '/api/v1/payments/stripe', headers: b.auth });
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: a.t.auth })).body.connected).toBe(true);
      // A's mapping is still there.
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${a.product.id}/prices`, headers: a.t.auth })).body).toHaveLength(1);
    });

    it("one account's mapping of a price id does not fulfil another account's event for the same price id", async () => {
      const a = await sold();
      const b = await createTenant(p.ctx);
      const bc = await connectStripe(p, b);
      // The same price id exists in B's Stripe account too, unmapped there.
      double.price(bc.key, a.price);
      const session = double.session(bc.key, [{ priceId: a.price }]);
      expect((await send(p.ctx, bc, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: 'b-buyer@example.com' }))).status).toBe(200);
      expect(await licensesOf(p.ctx.store, b.accountId)).toHaveLength(0);
      expect(await licensesOf(p.ctx.store, a.t.accountId)).toHaveLength(0);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: b.auth })).body.data[0].status).toBe('unmapped');
    });

    it('without an API key the payment endpoints are 401; the webhook needs none but its signature', async () => {
      for (const [method, url] of [
        ['PUT', '/api/v1/payments/stripe'],
        ['GET', '/api/v1/payments/stripe'],
        ['DELETE', '/api/v1/payments/stripe'],
        ['GET', '/api/v1/payments/purchases'],
        ['GET', '/api/v1/payments/purchases/pur_x/invoice'],
        ['POST', '/api/v1/products/p_x/prices'],
        ['GET', '/api/v1/products/p_x/prices'],
        ['DELETE', '/api/v1/products/p_x/prices/price_x'],
      ] as const) {
        expect((await call(p.ctx, { method, url, json: method === 'GET' || method === 'DELETE' ? undefined : {} })).status, `${method} ${url}`).toBe(401);
      }
      expect(await rowCount(p.ctx.store, 'payment_connections')).toBeGreaterThan(0);
    });
  });
});

describe('payments (stripe listen secret, development)', () => {
  const CLI_SECRET = 'whsec_cli_local_testing_secret';
  const p = usePaymentsApp('sqlite', { env: { STRIPE_CLI_WEBHOOK_SECRET: CLI_SECRET } });

  it("accepts events signed with STRIPE_CLI_WEBHOOK_SECRET for a test-mode connection, never for a live one", async () => {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const object = stripeObjects.checkoutSession({ id: p.double.session(c.key, []), email: 'cli@example.com' });
    expect((await deliver(p.ctx, c.connectionId, signedEvent(CLI_SECRET, 'checkout.session.completed', object))).status).toBe(200);
    expect((await deliver(p.ctx, c.connectionId, signedEvent('whsec_other', 'checkout.session.completed', object))).status).toBe(400);

    const live = await createTenant(p.ctx);
    const lc = await connectStripe(p, live, p.double.account({ key: `rk_live_${Date.now()}abcdef`, livemode: true }));
    const res = await deliver(p.ctx, lc.connectionId, signedEvent(CLI_SECRET, 'checkout.session.completed', object));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_signature');
  });
});

describe('payments (webhook rate limit)', () => {
  const p = usePaymentsApp('sqlite', { env: { RATE_LIMIT: 'on', RATE_LIMIT_SERVER_PER_MINUTE: '3' } });

  it('limits deliveries per connection (Stripe sends every account\'s events from the same addresses)', async () => {
    const a = await connectStripe(p, await createTenant(p.ctx));
    const b = await connectStripe(p, await createTenant(p.ctx));
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await send(p.ctx, a, 'customer.created', { id: `cus_${i}`, object: 'customer' })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await send(p.ctx, b, 'customer.created', { id: 'cus_b', object: 'customer' })).status).toBe(200);
  });
});

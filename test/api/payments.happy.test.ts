import { describe, expect, it } from 'vitest';
import { type DomainEvent, eventAccountId } from '../../src/core/events.ts';
import { call, createProduct, createTenant } from '../support/app.ts';
import { connectStripe, licensesOf, mapPrice, purchaseMailsTo, rowCount, send, usePaymentsApp } from '../support/payments.ts';
import { outboxFor } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';
import { stripeObjects } from '../support/stripe-double.ts';

const DAY = 86_400_000;
let n = 0;
const buyer = () => `buyer${++n}-${Date.now()}@example.com`;

forEachStore('payments (happy)', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  describe('connection', () => {
    it('connects: creates the endpoint at Stripe for the webhook URL with the four events, stores the key sealed, never shows it', async () => {
      const t = await createTenant(p.ctx);
      const key = double.account();
      const res = await call(p.ctx, { method: 'PUT', url: '/api/v1/payments/stripe', headers: t.auth, json: { restrictedKey: key } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ connected: true, livemode: false, webhookEndpointId: expect.stringMatching(/^we_/), connectedAt: expect.stringMatching(/Z$/) });
      const endpoint = double.endpoints.get(res.body.webhookEndpointId)!;
      expect(endpoint.url).toMatch(new RegExp(`^${p.ctx.config.baseUrl}/api/v1/payments/stripe/webhook/pc_[A-Za-z0-9]{20}$`));
      expect(endpoint.enabled_events).toEqual([
        'checkout.session.completed',
        'checkout.session.async_payment_succeeded',
        'charge.refunded',
        'charge.dispute.created',
        'customer.subscription.created',
        'customer.subscription.updated',
        'customer.subscription.deleted',
        'invoice.paid',
        'invoice.payment_failed',
      ]);
      expect(double.calls('POST', '/v1/webhook_endpoints').at(-1)!.key).toBe(key);

      const got = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth });
      expect(got.body).toEqual(res.body);
      const row = await p.ctx.store.read.first(p.ctx.store.db.selectFrom('payment_connections').selectAll().where('account_id', '=', t.accountId));
      expect(row!.api_key_sealed).toMatch(/^v1\./);
      expect(JSON.stringify(row)).not.toContain(key);
      expect(JSON.stringify(row)).not.toContain(endpoint.secret);
    });

    it('reports livemode from the endpoint Stripe created', async () => {
      const t = await createTenant(p.ctx);
      const res = await call(p.ctx, { method: 'PUT', url: '/api/v1/payments/stripe', headers: t.auth, json: { restrictedKey: double.account({ key: `rk_live_${n++}abcdefgh`, livemode: true }) } });
      expect(res.body.livemode).toBe(true);
    });

    it('reconnecting replaces the connection and deletes the old endpoint at Stripe (with the old key)', async () => {
      const t = await createTenant(p.ctx);
      const first = await connectStripe(p, t);
      const second = await connectStripe(p, t);
      expect(second.connectionId).not.toBe(first.connectionId);
      await expect.poll(() => [...double.endpoints.values()].some((e) => e.url === first.webhookUrl)).toBe(false);
      expect(double.calls('DELETE', '/v1/webhook_endpoints/').at(-1)!.key).toBe(first.key);
      const rows = await p.ctx.store.read.all(p.ctx.store.db.selectFrom('payment_connections').select('id').where('account_id', '=', t.accountId));
      expect(rows.map((r) => r.id)).toEqual([second.connectionId]);
      // The old URL is gone: its events are a 404.
      const res = await send(p.ctx, { ...first }, 'checkout.session.completed', stripeObjects.checkoutSession({ id: 'cs_test_old' }));
      expect(res.status).toBe(404);
    });

    it('disconnecting deletes the endpoint at Stripe and forgets the keys', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const res = await call(p.ctx, { method: 'DELETE', url: '/api/v1/payments/stripe', headers: t.auth });
      expect(res.status).toBe(200);
      expect(res.raw.body).toBe('');
      expect([...double.endpoints.values()].some((e) => e.url === c.webhookUrl)).toBe(false);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth })).body).toEqual({ connected: false });
      expect(await p.ctx.store.read.first(p.ctx.store.db.selectFrom('payment_connections').select('id').where('account_id', '=', t.accountId))).toBeUndefined();
    });
  });

  describe('price mappings', () => {
    it('maps a price in each mode, checked at Stripe, lists and removes them', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const [a, b, d] = [double.price(c.key), double.price(c.key), double.price(c.key)];
      expect(await mapPrice(p, t, product.id, { priceId: a, maxDevices: 2, licenseType: 'perpetual' })).toEqual({
        provider: 'stripe',
        priceId: a,
        productId: product.id,
        maxDevices: 2,
        licenseType: 'perpetual',
        offsetDays: null,
        fixedExpiresAt: null,
        billing: 'one_time',
        graceDays: null,
        entitlements: null,
        createdAt: expect.stringMatching(/Z$/),
      });
      expect(await mapPrice(p, t, product.id, { priceId: b, licenseType: 'timed', offsetDays: 365 })).toMatchObject({ offsetDays: 365, fixedExpiresAt: null });
      expect(await mapPrice(p, t, product.id, { priceId: d, licenseType: 'timed', fixedExpiresAt: '2031-01-01' })).toMatchObject({ offsetDays: null, fixedExpiresAt: '2031-01-01T00:00:00.000Z' });
      expect(double.calls('GET', `/v1/prices/${a}`)).toHaveLength(1);

      const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth });
      expect(list.body.map((m: { priceId: string }) => m.priceId)).toEqual([a, b, d]);
      const del = await call(p.ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/prices/${b}`, headers: t.auth });
      expect(del.status).toBe(200);
      expect(del.raw.body).toBe('');
      const after = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth });
      expect(after.body.map((m: { priceId: string }) => m.priceId)).toEqual([a, d]);
    });

    it("a product's delete takes its mappings with it", async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const price = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId: price });
      expect((await call(p.ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}`, headers: t.auth })).status).toBe(200);
      const other = await createProduct(p.ctx, t);
      expect(await mapPrice(p, t, other.id, { priceId: price })).toMatchObject({ productId: other.id });
    });
  });

  describe('fulfilment', () => {
    async function setup(mapping: Record<string, unknown>, productFields: Record<string, unknown> = {}) {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t, { name: 'Photo Studio', ...productFields });
      const price = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId: price, ...mapping });
      return { t, c, product, price };
    }

    it("a mapping's entitlements go to its licenses; without them, the product's defaults do", async () => {
      const { t, c, product, price } = await setup({ maxDevices: 1, licenseType: 'perpetual', entitlements: ['pro', 'sso'] }, { defaultEntitlements: ['basic'] });
      const plain = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId: plain, maxDevices: 1, licenseType: 'perpetual' });
      const session = double.session(c.key, [{ priceId: price, quantity: 1 }, { priceId: plain, quantity: 1 }]);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: buyer(), amountTotal: 4900 }));
      const sets = (await licensesOf(p.ctx.store, t.accountId)).map((l) => (l as { entitlements: string }).entitlements).sort();
      expect(sets).toEqual(['basic', 'pro sso']);
    });

    it('a paid checkout creates one perpetual license per mapped line item and queues its e-mail; purchases show it', async () => {
      const { t, c, product, price } = await setup({ maxDevices: 2, licenseType: 'perpetual' });
      const email = buyer();
      const session = double.session(c.key, [{ priceId: price, quantity: 1 }]);
      const res = await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email, amountTotal: 4900 }));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true });

      const licenses = await licensesOf(p.ctx.store, t.accountId);
      expect(licenses).toHaveLength(1);
      expect(licenses[0]).toMatchObject({ product_id: product.id, type: 'perpetual', expires_at: null, max_devices: 2, email });
      expect(await purchaseMailsTo(p.ctx.store, email)).toBe(1);
      const [job] = await outboxFor(p.ctx.store, email);
      const row = await p.ctx.store.read.first(p.ctx.store.db.selectFrom('outbox').select('payload').where('id', '=', job!.id));
      const mail = JSON.parse(row!.payload) as { kind: string; subject: string; text: string };
      expect(mail).toMatchObject({ kind: 'purchase', subject: 'Your license key for Photo Studio' });
      expect(mail.text).toContain(licenses[0]!.key);

      const list = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
      expect(list.body).toEqual({
        data: [
          {
            id: expect.stringMatching(/^pur_/),
            provider: 'stripe',
            sessionId: session,
            email,
            amountTotal: 4900,
            currency: 'usd',
            status: 'fulfilled',
            kind: 'new',
            licenseKeys: [licenses[0]!.key],
            hasInvoice: false,
            createdAt: expect.stringMatching(/Z$/),
          },
        ],
        nextCursor: null,
      });
      // The license is valid for the app at once.
      const validate = await call(p.ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers: { ...t.auth, 'license-key': licenses[0]!.key }, json: {} });
      expect(validate.body).toMatchObject({ isValid: true, status: 'active' });
    });

    it('quantity multiplies maxDevices; an offset gives expiry = creation + days', async () => {
      const { t, c, price } = await setup({ maxDevices: 3, licenseType: 'timed', offsetDays: 30 });
      const session = double.session(c.key, [{ priceId: price, quantity: 4 }]);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: buyer() }));
      const [license] = await licensesOf(p.ctx.store, t.accountId);
      expect(license!.max_devices).toBe(12);
      expect(license!.type).toBe('timed');
      // Counted from the purchase's processing time (the license is made in that same unit, a few ms on).
      const purchase = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data[0];
      expect(license!.expires_at).toBe(Date.parse(purchase.createdAt) + 30 * DAY);
      expect(license!.created_at - Date.parse(purchase.createdAt)).toBeLessThan(1000);
    });

    it('a fixed expiry gives every license that date; one already past gives an expired license', async () => {
      const future = await setup({ licenseType: 'timed', fixedExpiresAt: '2040-03-01T12:00:00Z' });
      await send(p.ctx, future.c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(future.c.key, [{ priceId: future.price }]), email: buyer() }));
      expect((await licensesOf(p.ctx.store, future.t.accountId))[0]!.expires_at).toBe(Date.parse('2040-03-01T12:00:00Z'));

      const past = await setup({ licenseType: 'timed', fixedExpiresAt: '2020-01-01' });
      const email = buyer();
      await send(p.ctx, past.c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(past.c.key, [{ priceId: past.price }]), email }));
      const [license] = await licensesOf(p.ctx.store, past.t.accountId);
      expect(license!.expires_at).toBe(Date.parse('2020-01-01T00:00:00Z'));
      const activate = await call(p.ctx, {
        method: 'POST',
        url: '/api/v1/public/licenses/activate',
        json: { licenseKey: license!.key, productId: past.product.id, deviceIdentifier: 'dev-1', deviceName: 'Laptop' },
      });
      expect(activate.status).toBe(400);
      expect(activate.body.error.code).toBe('license_expired');

      // On a product with fallback, an expired license is fallbacked (valid, limited access): the one status rule, purchases included.
      const fallback = await setup({ licenseType: 'timed', fixedExpiresAt: '2020-01-01' }, { fallbackEnabled: true });
      await send(p.ctx, fallback.c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(fallback.c.key, [{ priceId: fallback.price }]), email: buyer() }));
      const [fallbacked] = await licensesOf(p.ctx.store, fallback.t.accountId);
      const activated = await call(p.ctx, {
        method: 'POST',
        url: '/api/v1/public/licenses/activate',
        json: { licenseKey: fallbacked!.key, productId: fallback.product.id, deviceIdentifier: 'dev-1', deviceName: 'Laptop' },
      });
      expect([activated.status, activated.body.status]).toEqual([200, 'fallbacked']);
    });

    it('several line items: one license each, a purchase with all keys; an unmapped item marks the purchase unmapped', async () => {
      const { t, c, product, price } = await setup({ maxDevices: 1 });
      const second = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId: second, maxDevices: 5 });
      const unmapped = double.price(c.key);
      const session = double.session(c.key, [{ priceId: price }, { priceId: second }, { priceId: unmapped }]);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: buyer() }));
      const licenses = await licensesOf(p.ctx.store, t.accountId);
      expect(licenses.map((l) => l.max_devices).sort()).toEqual([1, 5]);
      const list = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
      expect(list.body.data[0].status).toBe('unmapped');
      expect([...list.body.data[0].licenseKeys].sort()).toEqual(licenses.map((l) => l.key).sort());
    });

    it('only unmapped prices: nothing is created and the purchase is kept as unmapped', async () => {
      const { t, c } = await setup({});
      const email = buyer();
      const session = double.session(c.key, [{ priceId: double.price(c.key) }]);
      expect((await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email }))).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
      expect(await purchaseMailsTo(p.ctx.store, email)).toBe(0);
      const list = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
      expect(list.body.data).toMatchObject([{ sessionId: session, status: 'unmapped', licenseKeys: [] }]);
    });

    it('no e-mail address on the session: the license is made without one and no e-mail is queued', async () => {
      const { t, c, price } = await setup({});
      const session = double.session(c.key, [{ priceId: price }]);
      const before = await rowCount(p.ctx.store, 'purchases');
      expect((await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: null }))).status).toBe(200);
      const [license] = await licensesOf(p.ctx.store, t.accountId);
      expect(license!.email).toBeNull();
      expect(await rowCount(p.ctx.store, 'purchases')).toBe(before + 1);
      const list = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
      expect(list.body.data[0]).toMatchObject({ email: null, status: 'fulfilled', licenseKeys: [license!.key] });
    });

    it('async payment: the unpaid completion creates nothing; async_payment_succeeded fulfils; a redelivery of either does nothing more', async () => {
      const { t, c, price } = await setup({});
      const email = buyer();
      const session = double.session(c.key, [{ priceId: price }]);
      const unpaid = stripeObjects.checkoutSession({ id: session, email, paymentStatus: 'unpaid' });
      expect((await send(p.ctx, c, 'checkout.session.completed', unpaid)).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
      expect(double.calls('GET', `/v1/checkout/sessions/${session}`)).toHaveLength(0);

      const paid = stripeObjects.checkoutSession({ id: session, email, paymentStatus: 'paid' });
      expect((await send(p.ctx, c, 'checkout.session.async_payment_succeeded', paid)).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
      expect((await send(p.ctx, c, 'checkout.session.async_payment_succeeded', paid)).status).toBe(200);
      expect((await send(p.ctx, c, 'checkout.session.completed', paid)).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
      expect(await purchaseMailsTo(p.ctx.store, email)).toBe(1);
    });

    it('no_payment_required (a 100 % coupon) fulfils like paid', async () => {
      const { t, c, price } = await setup({});
      const session = double.session(c.key, [{ priceId: price }]);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: buyer(), paymentStatus: 'no_payment_required', amountTotal: 0 }));
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
    });

    it("a dispute revokes the purchase's licenses (status disputed), once (a full refund: the shared fulfilment suite)", async () => {
      const { t, c, price } = await setup({});
      const session = double.session(c.key, [{ priceId: price, quantity: 2 }]);
      const paymentIntent = `pi_${session.slice(-10)}`;
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: buyer(), paymentIntent }));
      const [license] = await licensesOf(p.ctx.store, t.accountId);
      const dispute = stripeObjects.dispute({ paymentIntent });
      expect((await send(p.ctx, c, 'charge.dispute.created', dispute)).status).toBe(200);
      const got = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license!.key } });
      expect(got.body.revoked).toBe(true);
      const list = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
      expect(list.body.data[0].status).toBe('disputed');
      // Again: nothing changes (the license stays revoked, the status stays).
      expect((await send(p.ctx, c, 'charge.dispute.created', dispute)).status).toBe(200);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data[0].status).toBe('disputed');
    });

    it('emits purchase.completed and purchase.refunded with a plain purchase snapshot (account, status, license keys), actor provider stripe', async () => {
      const seen: DomainEvent[] = [];
      const { t, c, price } = await setup({});
      p.ctx.services.events.subscribe((e) => void (eventAccountId(e) === t.accountId && seen.push(e)));
      const session = double.session(c.key, [{ priceId: price }]);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: 'events@example.com', paymentIntent: 'pi_events_1' }));
      await send(p.ctx, c, 'charge.dispute.created', stripeObjects.dispute({ paymentIntent: 'pi_events_1' }));
      const [license] = await licensesOf(p.ctx.store, t.accountId);
      expect(seen.map((e) => e.type)).toEqual(['license.created', 'purchase.completed', 'license.updated', 'purchase.refunded']);
      expect(seen.every((e) => e.actor.type === 'provider' && e.actor.provider === 'stripe')).toBe(true);
      const completed = seen[1]!;
      expect(completed.type === 'purchase.completed' && completed.purchase).toEqual({
        id: expect.stringMatching(/^pur_/),
        accountId: t.accountId,
        provider: 'stripe',
        sessionId: session,
        email: 'events@example.com',
        amountTotal: 4900,
        currency: 'usd',
        status: 'fulfilled',
        kind: 'new',
        licenseKeys: [license!.key],
        hasInvoice: false,
        createdAt: expect.any(Number),
      });
      const refunded = seen[3]!;
      expect(refunded.type === 'purchase.refunded' && [refunded.reason, refunded.purchase.status, refunded.purchase.licenseKeys]).toEqual(['disputed', 'disputed', [license!.key]]);
      // Serializable as it is (operator webhooks forward events generically).
      expect(JSON.parse(JSON.stringify(completed))).toEqual(completed);
    });

    it('any other event is 200 and ignored', async () => {
      const { t, c } = await setup({});
      const res = await send(p.ctx, c, 'customer.created', { id: 'cus_123', object: 'customer' });
      expect(res.status).toBe(200);
      expect(await rowCount(p.ctx.store, 'purchases')).toBeGreaterThanOrEqual(0);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
    });
  });

  describe('purchases and invoices', () => {
    it('pages newest first with a cursor', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const sessions: string[] = [];
      for (let i = 0; i < 5; i++) {
        const s = double.session(c.key, []);
        sessions.push(s);
        await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: s, email: buyer() }));
      }
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 5; page++) {
        const url: string = `/api/v1/payments/purchases?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
        const res = await call(p.ctx, { method: 'GET', url, headers: t.auth });
        sizes.push(res.body.data.length);
        seen.push(...res.body.data.map((d: { sessionId: string }) => d.sessionId));
        cursor = res.body.nextCursor;
        if (!cursor) break;
      }
      expect(sizes).toEqual([2, 2, 1]);
      // Created in order within one test: newest first is the reverse (ids break ties in the same millisecond).
      expect(new Set(seen)).toEqual(new Set(sessions));
      const times = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data.map((d: { createdAt: string }) => d.createdAt);
      expect([...times].sort().reverse()).toEqual(times);
    });

    it('the invoice of a purchase is fetched from Stripe at request time', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const invoice = double.invoice(c.key);
      const session = double.session(c.key, []);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: buyer(), invoice }));
      const purchase = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data[0];
      expect(purchase.hasInvoice).toBe(true);
      const before = double.calls('GET', `/v1/invoices/${invoice}`).length;
      const res = await call(p.ctx, { method: 'GET', url: `/api/v1/payments/purchases/${purchase.id}/invoice`, headers: t.auth });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ invoicePdf: expect.stringMatching(/^https:\/\/pay\.stripe\.com\/invoice\/.+\/pdf$/), hostedInvoiceUrl: expect.stringMatching(/^https:\/\/invoice\.stripe\.com\//) });
      expect(double.calls('GET', `/v1/invoices/${invoice}`)).toHaveLength(before + 1);
    });
  });
});

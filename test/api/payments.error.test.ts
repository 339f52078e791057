import { describe, expect, it } from 'vitest';
import { call, createProduct, createTenant } from '../support/app.ts';
import { connectStripe, deliver, licensesOf, mapPrice, purchaseMailsTo, rowCount, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { signedEvent, signedPayload, stripeObjects } from '../support/stripe-double.ts';

forEachStore('payments (errors)', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;
  const connect = (auth: Record<string, string>, json: unknown) => call(p.ctx, { method: 'PUT', url: '/api/v1/payments/stripe', headers: auth, json });

  describe('connect', () => {
    it('a key Stripe refuses (401) is a 400 invalid_provider_key with Stripe\'s message; nothing is stored', async () => {
      const t = await createTenant(p.ctx);
      const before = await rowCount(p.ctx.store, 'payment_connections');
      const res = await connect(t.auth, { restrictedKey: 'rk_test_unknownkey000000000000' });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_provider_key');
      expect(res.body.error.message).toContain('Invalid API Key provided: rk_test_');
      expect(res.body.error.message).not.toContain('rk_test_unknownkey000000000000');
      expect(await rowCount(p.ctx.store, 'payment_connections')).toBe(before);
    });

    it('a restricted key without the webhook permission (403 at Stripe) is refused the same way', async () => {
      const t = await createTenant(p.ctx);
      const res = await connect(t.auth, { restrictedKey: double.account({ denied: ['rak_webhook_write'] }) });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_provider_key');
      expect(res.body.error.message).toContain("'rak_webhook_write' permission");
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth })).body).toEqual({ connected: false });
    });

    it('Stripe answering 5xx is a 502 provider_unavailable; nothing is stored', async () => {
      const t = await createTenant(p.ctx);
      const key = double.account();
      double.fail(500);
      try {
        const res = await connect(t.auth, { restrictedKey: key });
        expect(res.status).toBe(502);
        expect(res.body.error.code).toBe('provider_unavailable');
      } finally {
        double.heal();
      }
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth })).body).toEqual({ connected: false });
    });

    it('malformed bodies are a 400 invalid_request naming the field', async () => {
      const t = await createTenant(p.ctx);
      for (const body of [{}, { restrictedKey: 'pk_test_123456789' }, { restrictedKey: 42 }, { restrictedKey: 'rk_' + 'x'.repeat(300) }]) {
        const res = await connect(t.auth, body);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
      }
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth })).body).toEqual({ connected: false });
    });

    it('disconnecting with nothing connected is a 200 no-op; Stripe down during disconnect is a 502 and keeps the connection', async () => {
      const t = await createTenant(p.ctx);
      expect((await call(p.ctx, { method: 'DELETE', url: '/api/v1/payments/stripe', headers: t.auth })).status).toBe(200);
      await connectStripe(p, t);
      double.fail(503);
      try {
        const res = await call(p.ctx, { method: 'DELETE', url: '/api/v1/payments/stripe', headers: t.auth });
        expect(res.status).toBe(502);
      } finally {
        double.heal();
      }
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth })).body.connected).toBe(true);
    });
  });

  describe('price mappings', () => {
    it('bad input is a 400 naming the field and stores nothing', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const price = double.price(c.key);
      const cases: [Record<string, unknown>, string][] = [
        [{ maxDevices: 1, licenseType: 'perpetual' }, 'priceId'],
        [{ priceId: price, licenseType: 'perpetual' }, 'maxDevices'],
        [{ priceId: price, maxDevices: 0, licenseType: 'perpetual' }, 'maxDevices'],
        [{ priceId: price, maxDevices: 100001, licenseType: 'perpetual' }, 'maxDevices'],
        [{ priceId: price, maxDevices: '2', licenseType: 'perpetual' }, 'maxDevices'],
        [{ priceId: price, maxDevices: 1, licenseType: 'forever' }, 'licenseType'],
        [{ priceId: price, maxDevices: 1, licenseType: 'timed' }, 'offsetDays'],
        [{ priceId: price, maxDevices: 1, licenseType: 'timed', offsetDays: 10, fixedExpiresAt: '2030-01-01' }, 'fixedExpiresAt'],
        [{ priceId: price, maxDevices: 1, licenseType: 'timed', offsetDays: 0 }, 'offsetDays'],
        [{ priceId: price, maxDevices: 1, licenseType: 'timed', offsetDays: 36501 }, 'offsetDays'],
        [{ priceId: price, maxDevices: 1, licenseType: 'timed', fixedExpiresAt: 'next year' }, 'fixedExpiresAt'],
        [{ priceId: price, maxDevices: 1, licenseType: 'perpetual', offsetDays: 5 }, 'offsetDays'],
        [{ priceId: price, maxDevices: 1, licenseType: 'perpetual', fixedExpiresAt: '2030-01-01' }, 'fixedExpiresAt'],
        [{ priceId: 'price with spaces', maxDevices: 1, licenseType: 'perpetual' }, 'priceId'],
      ];
      for (const [json, path] of cases) {
        const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json });
        expect(res.status, JSON.stringify(json)).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
      }
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth })).body).toEqual([]);
    });

    it('a price unknown at Stripe is a 400 on priceId; stores nothing', async () => {
      const t = await createTenant(p.ctx);
      await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { priceId: 'price_doesnotexist', maxDevices: 1, licenseType: 'perpetual' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'priceId', message: 'no such price at stripe' }] });
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth })).body).toEqual([]);
    });

    it('a price maps to one product: a second mapping (same or another product) is a 409 price_already_mapped', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const [one, two] = [await createProduct(p.ctx, t), await createProduct(p.ctx, t)];
      const price = double.price(c.key);
      await mapPrice(p, t, one.id, { priceId: price });
      for (const product of [one, two]) {
        const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { priceId: price, maxDevices: 1, licenseType: 'perpetual' } });
        expect(res.status).toBe(409);
        expect(res.body.error.code).toBe('price_already_mapped');
      }
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${two.id}/prices`, headers: t.auth })).body).toEqual([]);
    });

    it('concurrent mappings of one price: exactly one wins', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const products = await Promise.all([1, 2, 3, 4, 5].map(() => createProduct(p.ctx, t)));
      const price = double.price(c.key);
      const results = await Promise.all(
        products.map((product) => call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { priceId: price, maxDevices: 1, licenseType: 'perpetual' } })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    });

    it('without a connection: 400 payments_not_connected; unknown product 404; unknown mapping 404', async () => {
      const t = await createTenant(p.ctx);
      const product = await createProduct(p.ctx, t);
      const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { priceId: 'price_1', maxDevices: 1, licenseType: 'perpetual' } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('payments_not_connected');
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/products/p_nope/prices', headers: t.auth })).status).toBe(404);
      expect((await call(p.ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/prices/price_nope`, headers: t.auth })).status).toBe(404);
    });

    it('Stripe down while checking the price is a 502; nothing stored', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const price = double.price(c.key);
      double.fail(500);
      try {
        const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { priceId: price, maxDevices: 1, licenseType: 'perpetual' } });
        expect(res.status).toBe(502);
        expect(res.body.error.code).toBe('provider_unavailable');
      } finally {
        double.heal();
      }
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth })).body).toEqual([]);
    });
  });

  describe('fulfilment failures', () => {
    it('Stripe failing while listing line items: 500 so Stripe retries, nothing stored; the retry fulfils', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const price = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId: price });
      const session = double.session(c.key, [{ priceId: price }]);
      const email = `retry-${Date.now()}@example.com`;
      const object = stripeObjects.checkoutSession({ id: session, email });
      double.fail(500);
      try {
        const res = await send(p.ctx, c, 'checkout.session.completed', object);
        expect(res.status).toBe(500);
        expect(res.body.error.code).toBe('internal_error');
      } finally {
        double.heal();
      }
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data).toEqual([]);
      expect((await send(p.ctx, c, 'checkout.session.completed', object)).status).toBe(200);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(1);
      expect(await purchaseMailsTo(p.ctx.store, email)).toBe(1);
    });

    it('a failure inside the unit rolls everything back (no purchase, license or e-mail) and answers 500', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      const price = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId: price });
      const session = double.session(c.key, [{ priceId: price }]);
      const email = `rollback-${Date.now()}@example.com`;
      // The purchase e-mail fails (the account's owner vanished from under it): the whole event rolls back.
      const original = p.ctx.services.purchaseMail.queue.bind(p.ctx.services.purchaseMail);
      p.ctx.services.purchaseMail.queue = async () => {
        throw new Error('mail queue broke');
      };
      try {
        const res = await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email }));
        expect(res.status).toBe(500);
        expect(JSON.stringify(res.body)).not.toContain('mail queue broke');
      } finally {
        p.ctx.services.purchaseMail.queue = original;
      }
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data).toEqual([]);
      expect(await purchaseMailsTo(p.ctx.store, email)).toBe(0);
    });
  });

  describe('malformed events, correctly signed', () => {
    it('a body that is no event (null, a list, no type, no data object) is a 400 invalid_request, never a 5xx; nothing is stored', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const bodies = [
        'null',
        '[]',
        '"checkout.session.completed"',
        '42',
        '{}',
        '{"type": 5, "data": {"object": {}}}',
        '{"type": "checkout.session.completed"}',
        '{"type": "checkout.session.completed", "data": {}}',
        '{"type": "checkout.session.completed", "data": null}',
        '{"type": "charge.refunded", "data": {"object": null}}',
        '{"type": "charge.dispute.created", "data": {"object": "du_1"}}',
        '{"type": "customer.created", "data": {}}',
      ];
      for (const body of bodies) {
        const res = await deliver(p.ctx, c.connectionId, signedPayload(c.secret, body));
        expect([res.status, res.body.error?.code], body).toEqual([400, 'invalid_request']);
      }
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data).toEqual([]);
    });

    it('an event of a handled type whose object lacks what it needs is answered 200 and ignored (logged), so Stripe stops retrying; nothing is stored', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      const product = await createProduct(p.ctx, t);
      await mapPrice(p, t, product.id, { priceId: double.price(c.key) });
      const objects: [string, unknown][] = [
        ['checkout.session.completed', {}],
        ['checkout.session.completed', { id: 42, payment_status: 'paid' }],
        ['checkout.session.async_payment_succeeded', { object: 'checkout.session', payment_status: 'paid', customer_details: 'x' }],
        ['charge.refunded', { refunded: 'yes', payment_intent: 'pi_1' }],
        ['charge.dispute.created', { payment_intent: 12 }],
      ];
      for (const [type, object] of objects) {
        const event = signedEvent(c.secret, type, object);
        const res = await deliver(p.ctx, c.connectionId, event);
        expect([res.status, res.body], `${type} ${JSON.stringify(object)}`).toEqual([200, { received: true }]);
        const outcome = await p.ctx.services.payments.handleNotification('stripe', c.connectionId, Buffer.from(event.payload), { 'stripe-signature': event.header });
        expect(outcome).toEqual({ outcome: 'ignored', type: expect.stringContaining(`${type} (malformed:`), malformed: expect.any(String) });
      }
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data).toEqual([]);
      expect(await licensesOf(p.ctx.store, t.accountId)).toHaveLength(0);
    });
  });

  describe('purchases', () => {
    it('bad limit or cursor is a 400', async () => {
      const t = await createTenant(p.ctx);
      for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=notacursor']) {
        const res = await call(p.ctx, { method: 'GET', url: `/api/v1/payments/purchases?${q}`, headers: t.auth });
        expect(res.status, q).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
      }
    });

    it('a purchase without an invoice, or an unknown purchase, is a 404 for the invoice', async () => {
      const t = await createTenant(p.ctx);
      const c = await connectStripe(p, t);
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(c.key, []), email: 'x@example.com' }));
      const purchase = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data[0];
      expect((await call(p.ctx, { method: 'GET', url: `/api/v1/payments/purchases/${purchase.id}/invoice`, headers: t.auth })).status).toBe(404);
      expect((await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases/pur_nope/invoice', headers: t.auth })).status).toBe(404);
    });
  });
});

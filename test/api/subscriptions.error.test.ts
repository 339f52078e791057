import { expect, it } from 'vitest';
import { call, createProduct, createTenant } from '../support/app.ts';
import { connectStripe, rowCount, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { stripeObjects } from '../support/stripe-double.ts';
import { licenseOf, subscribe } from '../support/subscriptions.ts';

forEachStore('subscriptions (errors)', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  it('a subscription mapping with a bad rule is a 400 naming the field, and stores nothing', async () => {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t);
    const price = double.price(c.key);
    const before = await rowCount(p.ctx.store, 'price_mappings');
    const bad: [Record<string, unknown>, string][] = [
      [{ billing: 'subscription', licenseType: 'perpetual' }, 'licenseType'],
      [{ billing: 'subscription', licenseType: 'timed', offsetDays: 30 }, 'offsetDays'],
      [{ billing: 'subscription', licenseType: 'timed', fixedExpiresAt: '2030-01-01' }, 'fixedExpiresAt'],
      [{ billing: 'subscription', licenseType: 'timed', graceDays: 61 }, 'graceDays'],
      [{ billing: 'subscription', licenseType: 'timed', graceDays: -1 }, 'graceDays'],
      [{ billing: 'monthly', licenseType: 'timed' }, 'billing'],
      [{ licenseType: 'perpetual', graceDays: 3 }, 'graceDays'],
    ];
    for (const [body, field] of bad) {
      const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { priceId: price, maxDevices: 1, ...body } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(res.body.error), JSON.stringify(body)).toContain(field);
    }
    expect(await rowCount(p.ctx.store, 'price_mappings')).toBe(before);
  });

  it('Stripe unreachable while reading the subscription: a 500 (Stripe retries), nothing stored; the retry works', async () => {
    const s = await subscribe(p, { checkout: false });
    const checkout = stripeObjects.subscriptionCheckout({ id: `cs_test_down_${kind}`, subscription: s.sub.id, email: s.email });
    double.fail(503);
    try {
      expect((await send(p.ctx, s.c, 'checkout.session.completed', checkout)).status).toBe(500);
    } finally {
      double.heal();
    }
    const purchases = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: s.t.auth });
    expect(purchases.body.data).toEqual([]);
    expect((await send(p.ctx, s.c, 'checkout.session.completed', checkout)).status).toBe(200);
    expect((await licenseOf(p, s)).view.subscription).toMatchObject({ id: s.sub.id });
  });

});

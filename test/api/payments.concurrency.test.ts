import { expect, it } from 'vitest';
import { call, createProduct, createTenant } from '../support/app.ts';
import { connectStripe, deliver, licensesOf, mapPrice, purchaseMailsTo, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { signedEvent, stripeObjects } from '../support/stripe-double.ts';

forEachStore('payments (concurrency)', (kind) => {
  const p = usePaymentsApp(kind);

  /** A tenant connected to Stripe, with one price mapped to a product of theirs. */
  async function connectedWithPrice() {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t);
    const price = p.double.price(c.key);
    await mapPrice(p, t, product.id, { priceId: price });
    return { t, c, price };
  }

  it('10 concurrent deliveries of one event: 1 purchase, 1 license per line item, 1 e-mail each; all answered 200', async () => {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t);
    const [one, two] = [p.double.price(c.key), p.double.price(c.key)];
    await mapPrice(p, t, product.id, { priceId: one });
    await mapPrice(p, t, product.id, { priceId: two, maxDevices: 3 });
    const session = p.double.session(c.key, [{ priceId: one }, { priceId: two }]);
    const email = `race-${kind}-${Date.now()}@example.com`;
    const event = signedEvent(c.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email }));
    const results = await Promise.all(Array.from({ length: 10 }, () => deliver(p.ctx, c.connectionId, event)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    // They raced: more than one got as far as asking Stripe for the line items.
    expect(p.double.calls('GET', `/v1/checkout/sessions/${session}/line_items`).length).toBeGreaterThan(1);
    const licenses = await licensesOf(p.ctx.store, t.accountId);
    expect(licenses.map((l) => l.max_devices).sort()).toEqual([1, 3]);
    expect(await purchaseMailsTo(p.ctx.store, email)).toBe(2);
    const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data;
    expect(purchases).toHaveLength(1);
    expect(purchases[0].licenseKeys).toHaveLength(2);
  });

  it('10 concurrent refunds of one purchase: one reversal', async () => {
    const { t, c, price } = await connectedWithPrice();
    const session = p.double.session(c.key, [{ priceId: price }]);
    await deliver(p.ctx, c.connectionId, signedEvent(c.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: 'r@example.com', paymentIntent: 'pi_race_refund' })));
    const refund = signedEvent(c.secret, 'charge.refunded', stripeObjects.charge({ paymentIntent: 'pi_race_refund', refunded: true }));
    let reversals = 0;
    p.ctx.services.events.subscribe((e) => void (e.type === 'purchase.refunded' && e.purchase.accountId === t.accountId && reversals++));
    const results = await Promise.all(Array.from({ length: 10 }, () => deliver(p.ctx, c.connectionId, refund)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(reversals).toBe(1);
    expect((await licensesOf(p.ctx.store, t.accountId))[0]!.revoked).toBeTruthy();
  });

  it('a refund racing its checkout: the purchase ends refunded and its license revoked, whichever commits first', async () => {
    const { t, c, price } = await connectedWithPrice();
    for (let i = 0; i < 8; i++) {
      const paymentIntent = `pi_race_${i}`;
      const session = p.double.session(c.key, [{ priceId: price }]);
      const checkout = signedEvent(c.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: `race${i}@example.com`, paymentIntent }));
      const refund = signedEvent(c.secret, 'charge.refunded', stripeObjects.charge({ paymentIntent, refunded: true }));
      const results = await Promise.all([deliver(p.ctx, c.connectionId, checkout), deliver(p.ctx, c.connectionId, refund), deliver(p.ctx, c.connectionId, refund)]);
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    }
    const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases?limit=100', headers: t.auth })).body.data;
    expect(purchases.map((x: { status: string }) => x.status)).toEqual(Array(8).fill('refunded'));
    expect((await licensesOf(p.ctx.store, t.accountId)).filter((l) => !l.revoked)).toEqual([]);
  });

  it('a refund processed while its checkout is being fulfilled (its unit open, its license made) waits for it: the purchase ends refunded, its license revoked', async () => {
    const { t, c, price } = await connectedWithPrice();
    // The refund is delivered at the instant the checkout's unit has made the license and not yet
    // committed. PostgreSQL: the unit is held open there (an in-unit subscriber waits) while the
    // refund is handled by the same process; SQLite runs units one at a time, so the refund's unit
    // can only come before or after, and both orders are tried.
    let hold: (() => Promise<void>) | undefined;
    p.ctx.services.events.subscribe(async (event) => {
      if (event.type !== 'license.created' || event.license.accountId !== t.accountId || !hold) return;
      const refund = hold;
      hold = undefined;
      await refund();
    });
    const rounds = kind === 'postgres' ? 3 : 6;
    for (let i = 0; i < rounds; i++) {
      const paymentIntent = `pi_instant_${i}`;
      const session = p.double.session(c.key, [{ priceId: price }]);
      const checkout = signedEvent(c.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: `instant${i}@example.com`, paymentIntent }));
      const refund = signedEvent(c.secret, 'charge.refunded', stripeObjects.charge({ paymentIntent, refunded: true }));
      let refundAnswer: Promise<{ status: number }> | undefined;
      if (kind === 'postgres') {
        hold = async () => {
          refundAnswer = deliver(p.ctx, c.connectionId, refund);
          // Long enough for the refund to reach its unit and wait on the payment's lock (or, without it, to commit).
          await new Promise((r) => setTimeout(r, 300));
        };
        expect((await deliver(p.ctx, c.connectionId, checkout)).status).toBe(200);
        expect((await refundAnswer!).status).toBe(200);
      } else {
        const order = i % 2 === 0 ? [checkout, refund] : [refund, checkout];
        const answers = await Promise.all(order.map((e) => deliver(p.ctx, c.connectionId, e)));
        expect(answers.map((a) => a.status)).toEqual([200, 200]);
      }
    }
    const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases?limit=100', headers: t.auth })).body.data;
    expect(purchases.map((x: { status: string }) => x.status)).toEqual(Array(rounds).fill('refunded'));
    expect((await licensesOf(p.ctx.store, t.accountId)).filter((l) => !l.revoked)).toEqual([]);
  });

  it('5 concurrent connects of one account: all answered, one connection left, the other endpoints deleted at Stripe', async () => {
    const t = await createTenant(p.ctx);
    const key = p.double.account();
    const results = await Promise.all(Array.from({ length: 5 }, () => call(p.ctx, { method: 'PUT', url: '/api/v1/payments/stripe', headers: t.auth, json: { restrictedKey: key } })));
    expect(results.map((r) => r.status)).toEqual(Array(5).fill(200));
    const rows = await p.ctx.store.read.all(p.ctx.store.db.selectFrom('payment_connections').select(['id', 'webhook_endpoint_id']).where('account_id', '=', t.accountId));
    expect(rows).toHaveLength(1);
    await expect.poll(() => [...p.double.endpoints.entries()].filter(([, e]) => e.key === key).map(([id]) => id)).toEqual([rows[0]!.webhook_endpoint_id]);
  });
});

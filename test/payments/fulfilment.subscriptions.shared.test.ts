import { describe, expect, it } from 'vitest';
import { createProduct } from '../support/app.ts';
import { DAY, type ProviderDriver, useProviderDoubles } from '../support/fulfilment/driver.ts';
import { buyer, deliver, deliverAll, drivers, licenseView, mapPrice, openShop, purchasesOf, SUBSCRIPTION } from '../support/fulfilment/drivers.ts';
import { licensesOf, purchaseMailsTo } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

/**
 * The subscription rules (decisions.md, "Subscriptions (Stripe)", which "Lemon Squeezy and Polar"
 * applies to them too), asserted once and run against every provider's double. Each test makes
 * the double hold a state and delivers the event the provider sends about it; the license must
 * follow that state by the one expiry rule.
 */
forEachStore('fulfilment, subscriptions (every provider)', (kind) => {
  const d = useProviderDoubles(kind);

  /** A subscription (quantity 2, graceDays 3, maxDevices 2) at the double, its start delivered unless `start` is false. */
  async function subscribed(driver: ProviderDriver, o: { start?: boolean; mapped?: boolean } = {}) {
    const { shop, productId, priceId } = await openShop(d.ctx, driver, { ...SUBSCRIPTION, maxDevices: 2, graceDays: 3 });
    const email = buyer();
    const sub = driver.subscription(shop, { priceId: o.mapped === false ? driver.price(shop, 'subscription') : priceId, quantity: 2, email });
    if (o.start !== false) await deliverAll(d.ctx, driver, shop, sub.started());
    const license = async () => {
      const rows = await licensesOf(d.ctx.store, shop.t.accountId);
      expect(rows).toHaveLength(1);
      return licenseView(d.ctx, shop, rows[0]!.key);
    };
    const expiry = async () => Date.parse((await license()).expiresAt);
    /** Makes the double hold the change and delivers the provider's event about it. */
    const change = async (c: Parameters<typeof sub.set>[0]) => {
      sub.set(c);
      await deliverAll(d.ctx, driver, shop, [sub.changed()]);
    };
    return { shop, productId, email, sub, license, expiry, change };
  }

  for (const driver of drivers(d)) {
    describe(driver.name, () => {
      it('its start creates one linked license (period end + graceDays, maxDevices × quantity), the e-mail once, a purchase of kind subscription', async () => {
        const s = await subscribed(driver);
        const view = await s.license();
        expect(view).toMatchObject({ productId: s.productId, type: 'timed', maxDevices: 4, email: s.email, subscription: { provider: driver.name, id: s.sub.id, status: 'active', cancelAtPeriodEnd: false } });
        expect(Date.parse(view.expiresAt)).toBe(s.sub.state().periodEnd + 3 * DAY);
        expect(await purchaseMailsTo(d.ctx.store, s.email)).toBe(1);
        expect(await purchasesOf(d.ctx, s.shop)).toMatchObject([{ provider: driver.name, kind: 'subscription', status: 'fulfilled', licenseKeys: [view.key] }]);
      });

      it('renewal: the expiry moves to the new period end + graceDays; delivered 10 times at once, no second e-mail', async () => {
        const s = await subscribed(driver);
        const { periodEnd } = s.sub.state();
        s.sub.set({ periodStart: periodEnd, periodEnd: periodEnd + 30 * DAY });
        const renewed = s.sub.renewed();
        const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(d.ctx, driver.name, s.shop.connectionId, renewed)));
        expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
        expect(await s.expiry()).toBe(periodEnd + 33 * DAY);
        expect(await purchaseMailsTo(d.ctx.store, s.email)).toBe(1);
      });

      it("a plan change moves the license to the mapping's product, maxDevices × quantity, entitlements and graceDays, keeping its key; a quantity change sets maxDevices", async () => {
        const s = await subscribed(driver);
        const before = await s.license();
        const pro = await createProduct(d.ctx, s.shop.t, { name: 'Photo Studio Pro' });
        const proPrice = driver.price(s.shop, 'subscription');
        await mapPrice(d.ctx, driver, s.shop, pro.id, { ...SUBSCRIPTION, priceId: proPrice, maxDevices: 5, graceDays: 1, entitlements: ['pro', 'sync'] });
        await s.change({ priceId: proPrice });
        const moved = await s.license();
        expect(moved).toMatchObject({ key: before.key, productId: pro.id, maxDevices: 10, entitlements: ['pro', 'sync'] });
        expect(Date.parse(moved.expiresAt)).toBe(s.sub.state().periodEnd + 1 * DAY);
        await s.change({ quantity: 3 });
        expect(await s.license()).toMatchObject({ key: before.key, productId: pro.id, maxDevices: 15 });
      });

      it('cancel at period end: exactly the period end; undone: period end + graceDays again', async () => {
        const s = await subscribed(driver);
        const { periodEnd } = s.sub.state();
        await s.change({ cancelAtPeriodEnd: true });
        const view = await s.license();
        expect(Date.parse(view.expiresAt)).toBe(periodEnd);
        expect(view.subscription.cancelAtPeriodEnd).toBe(true);
        await s.change({ cancelAtPeriodEnd: false });
        expect(await s.expiry()).toBe(periodEnd + 3 * DAY);
      });

      it("past due: the current period's START + graceDays (the renewal moved the period on, unpaid)", async () => {
        const s = await subscribed(driver);
        const { periodEnd } = s.sub.state();
        await s.change({ status: 'past_due', periodStart: periodEnd, periodEnd: periodEnd + 30 * DAY });
        expect(await s.expiry()).toBe(periodEnd + 3 * DAY);
        expect((await s.license()).subscription.status).toBe('past_due');
      });

      it('ended: its ended_at', async () => {
        const s = await subscribed(driver);
        const endedAt = Math.floor(Date.now() / 1000) * 1000 - 60_000;
        await s.change({ status: 'ended', endedAt });
        const view = await s.license();
        expect(Date.parse(view.expiresAt)).toBe(endedAt);
        expect(view.subscription.status).toBe('canceled');
      });

      it("out of order and redelivered: events before the start change nothing; its start x10, stale copies and the current event at once converge on the provider's current state; one license, one e-mail, one purchase", async () => {
        const s = await subscribed(driver, { start: false });
        const stale = s.sub.changed();
        await deliverAll(d.ctx, driver, s.shop, [stale]);
        expect(await licensesOf(d.ctx.store, s.shop.t.accountId)).toHaveLength(0);
        const { periodEnd } = s.sub.state();
        s.sub.set({ status: 'past_due', periodStart: periodEnd, periodEnd: periodEnd + 30 * DAY });
        const deliveries = [...s.sub.started().flatMap((e) => Array(10).fill(e)), ...Array(5).fill(stale), s.sub.changed()];
        const answers = await Promise.all(deliveries.map((e) => deliver(d.ctx, driver.name, s.shop.connectionId, e)));
        expect(answers.map((a) => `${a.status} ${a.status === 200 ? '' : JSON.stringify(a.body)}`)).toEqual(answers.map(() => '200 '));
        expect(await s.expiry()).toBe(periodEnd + 3 * DAY);
        expect(await purchaseMailsTo(d.ctx.store, s.email)).toBe(1);
        expect(await purchasesOf(d.ctx, s.shop)).toHaveLength(1);
      });

      it('an unmapped price keeps the purchase unmapped: no license, no e-mail', async () => {
        const s = await subscribed(driver, { mapped: false });
        expect(await licensesOf(d.ctx.store, s.shop.t.accountId)).toHaveLength(0);
        expect(await purchaseMailsTo(d.ctx.store, s.email)).toBe(0);
        expect(await purchasesOf(d.ctx, s.shop)).toMatchObject([{ provider: driver.name, kind: 'subscription', status: 'unmapped', licenseKeys: [] }]);
      });

      it("a refund of the subscription's payment leaves the license to the subscription: not revoked; once the provider ends it, its ended_at", async () => {
        const s = await subscribed(driver);
        const before = await s.license();
        await deliverAll(d.ctx, driver, s.shop, s.sub.paymentRefunded());
        expect(await s.license()).toMatchObject({ revoked: false, expiresAt: before.expiresAt });
        const endedAt = Math.floor(Date.now() / 1000) * 1000;
        await s.change({ status: 'ended', endedAt });
        expect(await s.license()).toMatchObject({ revoked: false, expiresAt: new Date(endedAt).toISOString() });
      });
    });
  }
});

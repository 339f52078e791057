import { describe, expect, it } from 'vitest';
import { useProviderDoubles } from '../support/fulfilment/driver.ts';
import { buyer, deliver, deliverAll, drivers, licenseView, openShop, purchasesOf } from '../support/fulfilment/drivers.ts';
import { licensesOf, purchaseMailsTo } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

/**
 * The one-time order rules (decisions.md, waves 2 and 3), asserted once and run against every
 * provider's double: what differs per provider is only how its driver makes the order and signs its events.
 */
forEachStore('fulfilment, orders (every provider)', (kind) => {
  const d = useProviderDoubles(kind);

  for (const driver of drivers(d)) {
    describe(driver.name, () => {
      it("an order creates a license per mapping (maxDevices × quantity, the mapping's entitlements) and queues the purchase e-mail once; the purchase names the provider", async () => {
        const { shop, productId, priceId } = await openShop(d.ctx, driver, { maxDevices: 2, entitlements: ['pro'] });
        const email = buyer();
        const order = driver.order(shop, { priceId, quantity: 3, email });
        await deliverAll(d.ctx, driver, shop, [order.paid()]);
        const licenses = await licensesOf(d.ctx.store, shop.t.accountId);
        expect(licenses.map((l) => [l.product_id, l.type, l.max_devices, l.email, l.expires_at])).toEqual([[productId, 'perpetual', 6, email, null]]);
        expect((await licenseView(d.ctx, shop, licenses[0]!.key)).entitlements).toEqual(['pro']);
        expect(await purchaseMailsTo(d.ctx.store, email)).toBe(1);
        expect(await purchasesOf(d.ctx, shop)).toMatchObject([{ provider: driver.name, sessionId: order.id, status: 'fulfilled', kind: 'new', email, licenseKeys: [licenses[0]!.key] }]);
      });

      it('the same event delivered 10 times at once: one license, one e-mail, one purchase', async () => {
        const { shop, priceId } = await openShop(d.ctx, driver);
        const email = buyer();
        const paid = driver.order(shop, { priceId, quantity: 1, email }).paid();
        const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(d.ctx, driver.name, shop.connectionId, paid)));
        expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
        expect(await licensesOf(d.ctx.store, shop.t.accountId)).toHaveLength(1);
        expect(await purchaseMailsTo(d.ctx.store, email)).toBe(1);
        expect(await purchasesOf(d.ctx, shop)).toHaveLength(1);
      });

      it('a full refund revokes the licenses and marks the purchase refunded, once; a partial refund revokes nothing', async () => {
        const { shop, priceId } = await openShop(d.ctx, driver);
        const order = driver.order(shop, { priceId, quantity: 1, email: buyer() });
        await deliverAll(d.ctx, driver, shop, [order.paid(), order.partiallyRefunded()]);
        const [license] = await licensesOf(d.ctx.store, shop.t.accountId);
        expect((await licenseView(d.ctx, shop, license!.key)).revoked).toBe(false);
        const refund = order.refunded();
        await deliverAll(d.ctx, driver, shop, [refund, refund]);
        expect((await licenseView(d.ctx, shop, license!.key)).revoked).toBe(true);
        expect(await purchasesOf(d.ctx, shop)).toMatchObject([{ status: 'refunded', licenseKeys: [license!.key] }]);
      });

      it('a refund that arrives before its order: the purchase is recorded refunded, with no license and no e-mail', async () => {
        const { shop, priceId } = await openShop(d.ctx, driver);
        const email = buyer();
        const order = driver.order(shop, { priceId, quantity: 1, email });
        await deliverAll(d.ctx, driver, shop, [order.refunded(), order.paid()]);
        expect(await licensesOf(d.ctx.store, shop.t.accountId)).toHaveLength(0);
        expect(await purchaseMailsTo(d.ctx.store, email)).toBe(0);
        expect(await purchasesOf(d.ctx, shop)).toMatchObject([{ sessionId: order.id, status: 'refunded', licenseKeys: [] }]);
      });

      it('an order of an unmapped price keeps the purchase unmapped: no license, no e-mail', async () => {
        const { shop } = await openShop(d.ctx, driver);
        const email = buyer();
        const order = driver.order(shop, { priceId: driver.price(shop), quantity: 1, email });
        await deliverAll(d.ctx, driver, shop, [order.paid()]);
        expect(await licensesOf(d.ctx.store, shop.t.accountId)).toHaveLength(0);
        expect(await purchaseMailsTo(d.ctx.store, email)).toBe(0);
        expect(await purchasesOf(d.ctx, shop)).toMatchObject([{ provider: driver.name, sessionId: order.id, status: 'unmapped', licenseKeys: [] }]);
      });
    });
  }
});

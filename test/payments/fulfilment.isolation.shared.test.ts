import { describe, expect, it } from 'vitest';
import { call } from '../support/app.ts';
import { useProviderDoubles } from '../support/fulfilment/driver.ts';
import { buyer, deliver, deliverAll, drivers, licenseView, openShop, purchasesOf, SUBSCRIPTION } from '../support/fulfilment/drivers.ts';
import { licensesOf } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

/**
 * Tenant isolation of the fulfilment, for every provider: a connection belongs to one account, its
 * signing secret proves the sender, and the provider is asked with that account's key only.
 */
forEachStore('fulfilment, tenant isolation (every provider)', (kind) => {
  const d = useProviderDoubles(kind);
  const all = drivers(d);

  for (const driver of all) {
    describe(driver.name, () => {
      it("an event on account A's connection never touches account B's licenses, purchases or mappings; A's event signed for B's connection is refused", async () => {
        const a = await openShop(d.ctx, driver);
        const b = await openShop(d.ctx, driver);
        const mappingsOfB = async () => (await call(d.ctx, { method: 'GET', url: `/api/v1/products/${b.productId}/prices`, headers: b.shop.t.auth })).body;
        const bBefore = await mappingsOfB();
        const order = driver.order(a.shop, { priceId: a.priceId, quantity: 1, email: buyer() });
        const forged = await deliver(d.ctx, driver.name, b.shop.connectionId, order.paid());
        expect([forged.status, forged.body.error?.code]).toEqual([400, 'invalid_signature']);
        await deliverAll(d.ctx, driver, a.shop, [order.paid()]);
        const [license] = await licensesOf(d.ctx.store, a.shop.t.accountId);
        expect(license).toBeDefined();
        expect(await licensesOf(d.ctx.store, b.shop.t.accountId)).toEqual([]);
        expect(await purchasesOf(d.ctx, b.shop)).toEqual([]);
        expect(await mappingsOfB()).toEqual(bBefore);
        // B's own (signed) refund naming A's order: B has no such purchase, A's license stays.
        await deliverAll(d.ctx, driver, b.shop, [order.refunded(b.shop)]);
        expect((await licenseView(d.ctx, a.shop, license!.key)).revoked).toBe(false);
      });

      it("an event on A's connection naming B's subscription changes nothing of B's: A's key cannot read it", async () => {
        const a = await openShop(d.ctx, driver, SUBSCRIPTION);
        const b = await openShop(d.ctx, driver, SUBSCRIPTION);
        const sub = driver.subscription(b.shop, { priceId: b.priceId, quantity: 1, email: buyer() });
        await deliverAll(d.ctx, driver, b.shop, sub.started());
        const [license] = await licensesOf(d.ctx.store, b.shop.t.accountId);
        const before = await licenseView(d.ctx, b.shop, license!.key);
        sub.set({ status: 'ended', endedAt: Math.floor(Date.now() / 1000) * 1000 });
        await deliverAll(d.ctx, driver, a.shop, [sub.changed(a.shop)]);
        expect(await licenseView(d.ctx, b.shop, license!.key)).toEqual(before);
        expect(await licensesOf(d.ctx.store, a.shop.t.accountId)).toEqual([]);
      });

      it("an unknown connection id, or the connection on another provider's route, is a 404", async () => {
        const a = await openShop(d.ctx, driver);
        const paid = driver.order(a.shop, { priceId: a.priceId, quantity: 1, email: buyer() }).paid();
        expect((await deliver(d.ctx, driver.name, 'pc_nosuchconnection000', paid)).status).toBe(404);
        for (const other of all.filter((o) => o.name !== driver.name)) {
          expect((await deliver(d.ctx, other.name, a.shop.connectionId, paid)).status, other.name).toBe(404);
        }
        expect(await licensesOf(d.ctx.store, a.shop.t.accountId)).toEqual([]);
      });
    });
  }
});

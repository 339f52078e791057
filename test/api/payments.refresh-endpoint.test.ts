import { describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { LEMONSQUEEZY_EVENTS } from '../../src/modules/payments/lemonsqueezy.ts';
import { POLAR_EVENTS } from '../../src/modules/payments/polar.ts';
import { STRIPE_EVENTS } from '../../src/modules/payments/stripe.ts';
import { call, createTenant } from '../support/app.ts';
import { useProviderDoubles } from '../support/fulfilment/driver.ts';
import { drivers } from '../support/fulfilment/drivers.ts';
import { forEachStore } from '../support/stores.ts';

const HANDLED: Record<string, readonly string[]> = { stripe: STRIPE_EVENTS, lemonsqueezy: LEMONSQUEEZY_EVENTS, polar: POLAR_EVENTS };

/** POST /api/v1/payments/{provider}/refresh-endpoint, one implementation through the seam, for every provider. */
forEachStore('payments: refresh-endpoint (every provider)', (kind) => {
  const d = useProviderDoubles(kind);

  for (const driver of drivers(d)) {
    describe(driver.name, () => {
      const url = `/api/v1/payments/${driver.name}/refresh-endpoint`;

      it("sets the endpoint's events at the provider to every event handled now; the answer is the connection", async () => {
        const shop = await driver.connect(await createTenant(d.ctx));
        driver.setEndpointEvents(shop, [HANDLED[driver.name]![0]!]);
        const res = await call(d.ctx, { method: 'POST', url, headers: shop.t.auth });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ connected: true, webhookEndpointId: shop.endpointId });
        expect([...driver.endpointEvents(shop)].sort()).toEqual([...HANDLED[driver.name]!].sort());
      });

      it('not connected: 400 payments_not_connected; the endpoint gone at the provider: 400 invalid_request; the provider down: 502', async () => {
        const t = await createTenant(d.ctx);
        const none = await call(d.ctx, { method: 'POST', url, headers: t.auth });
        expect([none.status, none.body.error.code]).toEqual([400, 'payments_not_connected']);
        const shop = await driver.connect(t);
        driver.failNextCall(503);
        const down = await call(d.ctx, { method: 'POST', url, headers: t.auth });
        expect([down.status, down.body.error.code]).toEqual([502, 'provider_unavailable']);
        driver.dropEndpoint(shop);
        const gone = await call(d.ctx, { method: 'POST', url, headers: t.auth });
        expect([gone.status, gone.body.error.code]).toEqual([400, 'invalid_request']);
        expect(gone.body.error.message).toMatch(/connect again/);
        // The connection stays, for the operator to reconnect.
        expect((await call(d.ctx, { method: 'GET', url: `/api/v1/payments/${driver.name}`, headers: t.auth })).body.connected).toBe(true);
      });

      it('a read-only or licenses-scoped key is refused with 403 insufficient_scope; the endpoint is left as it was', async () => {
        const shop = await driver.connect(await createTenant(d.ctx));
        driver.setEndpointEvents(shop, ['only.this']);
        for (const scope of ['read', 'licenses']) {
          const { secret } = await d.ctx.services.apiKeys.create(cliPrincipal(shop.t.accountId), scope, { scope });
          const res = await call(d.ctx, { method: 'POST', url, headers: { authorization: `Bearer ${secret}` } });
          expect([res.status, res.body.error.code], scope).toEqual([403, 'insufficient_scope']);
        }
        expect(driver.endpointEvents(shop)).toEqual(['only.this']);
      });
    });
  }
});

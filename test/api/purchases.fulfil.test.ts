import { describe, expect, it } from 'vitest';
import { call, createProduct, createTenant, type Tenant } from '../support/app.ts';
import { describeFormCases } from '../support/dashboard-forms.ts';
import { connectStripe, licensesOf, mapPrice, purchaseMailsTo, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { stripeObjects } from '../support/stripe-double.ts';
import { licenseOf, subscribe } from '../support/subscriptions.ts';

let n = 0;

forEachStore('fulfil later (POST /payments/purchases/{id}/fulfil)', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  /** A paid checkout of a price nobody mapped: the purchase is kept `unmapped`. */
  async function unmappedPurchase(tenant?: Tenant) {
    const t = tenant ?? (await createTenant(p.ctx));
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t);
    const price = double.price(c.key);
    const email = `later${++n}-${Date.now()}@example.com`;
    const session = double.session(c.key, [{ priceId: price, quantity: 2 }]);
    await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email, paymentIntent: `pi_later_${n}_${kind}` }));
    const row = await p.ctx.store.read.first(p.ctx.store.db.selectFrom('purchases').select(['id', 'status']).where('session_id', '=', session));
    return { t, c, product, price, email, purchaseId: row!.id, status: row!.status };
  }
  const fulfil = (t: Tenant, id: string) => call(p.ctx, { method: 'POST', url: `/api/v1/payments/purchases/${id}/fulfil`, headers: t.auth });

  it('once the price is mapped: one license per item, the purchase e-mail, status fulfilled; again: the same answer, nothing more', async () => {
    const u = await unmappedPurchase();
    expect(u.status).toBe('unmapped');
    expect((await fulfil(u.t, u.purchaseId)).status).toBe(400); // not mapped yet
    await mapPrice(p, u.t, u.product.id, { priceId: u.price, maxDevices: 3 });
    const res = await fulfil(u.t, u.purchaseId);
    expect(res.status).toBe(200);
    const licenses = await licensesOf(p.ctx.store, u.t.accountId);
    expect(licenses).toHaveLength(1);
    expect(licenses[0]).toMatchObject({ product_id: u.product.id, max_devices: 6, email: u.email });
    expect(res.body).toMatchObject({ id: u.purchaseId, status: 'fulfilled', kind: 'new', licenseKeys: [licenses[0]!.key] });
    expect(await purchaseMailsTo(p.ctx.store, u.email)).toBe(1);
    const again = await fulfil(u.t, u.purchaseId);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(res.body);
    expect(await licensesOf(p.ctx.store, u.t.accountId)).toHaveLength(1);
  });

  it('exactly once under 10 concurrent calls', async () => {
    const u = await unmappedPurchase();
    await mapPrice(p, u.t, u.product.id, { priceId: u.price });
    const answers = await Promise.all(Array.from({ length: 10 }, () => fulfil(u.t, u.purchaseId)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(await licensesOf(p.ctx.store, u.t.accountId)).toHaveLength(1);
    expect(await purchaseMailsTo(p.ctx.store, u.email)).toBe(1);
    expect(new Set(answers.map((a) => JSON.stringify(a.body.licenseKeys))).size).toBe(1);
  });

  it("another account's purchase is a 404; a refunded one a 409 purchase_not_unmapped; nothing is created", async () => {
    const u = await unmappedPurchase();
    await mapPrice(p, u.t, u.product.id, { priceId: u.price });
    const other = await createTenant(p.ctx);
    expect((await fulfil(other, u.purchaseId)).status).toBe(404);
    expect((await fulfil(u.t, 'pur_doesnotexist')).status).toBe(404);
    await send(p.ctx, u.c, 'charge.refunded', stripeObjects.charge({ paymentIntent: `pi_later_${n}_${kind}`, refunded: true }));
    const res = await fulfil(u.t, u.purchaseId);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('purchase_not_unmapped');
    expect(await licensesOf(p.ctx.store, u.t.accountId)).toHaveLength(0);
  });

  it('a subscription checkout kept unmapped: fulfilled later, the license is linked and follows the subscription', async () => {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t);
    const price = double.price(c.key);
    const sub = double.subscription(c.key, { items: [{ priceId: price }] });
    const email = `later-sub${++n}@example.com`;
    await send(p.ctx, c, 'checkout.session.completed', stripeObjects.subscriptionCheckout({ id: `cs_test_latersub${n}`, subscription: sub.id, email }));
    const purchase = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data[0];
    expect(purchase).toMatchObject({ status: 'unmapped', kind: 'subscription' });
    await mapPrice(p, t, product.id, { priceId: price, billing: 'subscription', licenseType: 'timed' });
    expect((await fulfil(t, purchase.id)).status).toBe(200);
    const s = { t, c, productId: product.id, price, sub, email, events: [] };
    const { view } = await licenseOf(p, s);
    expect(view.subscription).toMatchObject({ id: sub.id, status: 'active' });
  });

  describe('dashboard', () => {
    describeFormCases(p.ctx, [
      {
        name: 'fulfil an unmapped purchase',
        prepare: async (ctx, t) => {
          const u = await unmappedPurchase(t);
          await mapPrice(p, t, u.product.id, { priceId: u.price });
          return {
            page: '/dashboard/payments/purchases',
            action: `/dashboard/payments/purchases/${u.purchaseId}/fulfil`,
            good: {},
            state: () => licensesOf(ctx.store, t.accountId),
            owned: true,
          };
        },
      },
    ]);
  });

  it('support handles purchases (decisions.md: purchases read and write): sees them, fulfils one; never the payment connection; a viewer only sees', async () => {
    const { signIn } = await import('../support/dashboard.ts');
    const { addMember } = await import('../support/members.ts');
    const u = await unmappedPurchase();
    await mapPrice(p, u.t, u.product.id, { priceId: u.price });
    const owner = await signIn(p.ctx, u.t.email);
    const { browser: support } = await addMember(p.ctx, owner, 'support');
    const nav = (await support.request('GET', '/dashboard/licenses')).body;
    expect(nav).toContain('href="/dashboard/payments/purchases"');
    const page = await support.request('GET', '/dashboard/payments/purchases');
    expect(page.status).toBe(200);
    expect(page.body).toContain(u.email);
    expect((await support.request('GET', '/dashboard/payments')).status).toBe(403);
    const { browser: viewer } = await addMember(p.ctx, owner, 'viewer');
    await viewer.request('GET', '/dashboard/payments/purchases');
    expect((await viewer.request('POST', `/dashboard/payments/purchases/${u.purchaseId}/fulfil`, { csrf: viewer.csrf })).status).toBe(403);
    expect(await licensesOf(p.ctx.store, u.t.accountId)).toHaveLength(0);
    await support.request('GET', '/dashboard/payments/purchases');
    const done = await support.request('POST', `/dashboard/payments/purchases/${u.purchaseId}/fulfil`, { csrf: support.csrf });
    expect(done.status).toBe(303);
    expect(await licensesOf(p.ctx.store, u.t.accountId)).toHaveLength(1);
  });

  it("the dashboard's Fulfil button shows beside an unmapped purchase only", async () => {
    const { signIn } = await import('../support/dashboard.ts');
    const u = await unmappedPurchase();
    const browser = await signIn(p.ctx, u.t.email);
    const page = await browser.request('GET', '/dashboard/payments/purchases');
    expect(page.body).toContain(`/dashboard/payments/purchases/${u.purchaseId}/fulfil`);
  });
});

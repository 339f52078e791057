import { expect, it } from 'vitest';
import { call, createProduct } from '../support/app.ts';
import { activateDevice } from '../support/mail.ts';
import { licensesOf, mapPrice, purchaseMailsTo, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { stripeObjects } from '../support/stripe-double.ts';
import { DAY, licenseOf, subscribe, subscriptionEvent } from '../support/subscriptions.ts';

forEachStore('subscriptions (happy)', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;
  const period = (s: { sub: { items: { current_period_start: number; current_period_end: number }[] } }) => ({
    start: s.sub.items[0]!.current_period_start * 1000,
    end: s.sub.items[0]!.current_period_end * 1000,
  });

  it('a subscription mapping: billing subscription, timed, graceDays 7 by default', async () => {
    const s = await subscribe(p, { checkout: false });
    const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${s.productId}/prices`, headers: s.t.auth });
    expect(list.body).toMatchObject([{ priceId: s.price, billing: 'subscription', licenseType: 'timed', graceDays: 7, offsetDays: null, fixedExpiresAt: null }]);
  });

  it('renewal (invoice.paid after the period moved on): the expiry follows, subscription.renewed fires, no second e-mail', async () => {
    const s = await subscribe(p);
    const first = period(s);
    double.updateSubscription(s.c.key, s.sub.id, (sub) => {
      for (const item of sub.items) [item.current_period_start, item.current_period_end] = [item.current_period_end, item.current_period_end + 30 * 86_400];
    });
    const res = await send(p.ctx, s.c, 'invoice.paid', stripeObjects.subscriptionInvoice({ subscription: s.sub.id, status: 'paid' }));
    expect(res.status).toBe(200);
    const { row } = await licenseOf(p, s);
    expect(Number(row.expires_at)).toBe(first.end + 30 * DAY + 7 * DAY);
    expect(await purchaseMailsTo(p.ctx.store, s.email)).toBe(1);
    expect(s.events.filter((e) => e.type === 'subscription.renewed')).toHaveLength(1);
    const updated = s.events.find((e) => e.type === 'license.updated');
    expect(updated?.actor).toEqual({ type: 'provider', provider: 'stripe' });
  });

  it('ending fires subscription.canceled once (the expiry rule itself: the shared fulfilment suite); trialing: the trial end + grace', async () => {
    const s = await subscribe(p, { graceDays: 3 });
    const endedAt = Math.floor(Date.now() / 1000) - 60;
    double.updateSubscription(s.c.key, s.sub.id, (sub) => {
      sub.status = 'canceled';
      sub.ended_at = endedAt;
    });
    await subscriptionEvent(p, s, 'customer.subscription.deleted');
    await subscriptionEvent(p, s, 'customer.subscription.deleted');
    expect(Number((await licenseOf(p, s)).row.expires_at)).toBe(endedAt * 1000);
    expect(s.events.filter((e) => e.type === 'subscription.canceled')).toHaveLength(1);

    const trialEnd = Math.floor(Date.now() / 1000) + 14 * 86_400;
    const trial = await subscribe(p, { status: 'trialing', trialEnd });
    expect(Number((await licenseOf(p, trial)).row.expires_at)).toBe(trialEnd * 1000 + 7 * DAY);
  });

  it('a plan change moves the license to the mapped product keeping key and devices; quantity sets maxDevices; an unmapped price changes neither', async () => {
    const s = await subscribe(p, { maxDevices: 1 });
    const { row } = await licenseOf(p, s);
    await activateDevice(p.ctx, s.t.auth, row.key, s.productId, 'device-1');
    const pro = await createProduct(p.ctx, s.t, { name: 'Cloud Studio Pro' });
    const proPrice = double.price(s.c.key);
    await mapPrice(p, s.t, pro.id, { priceId: proPrice, billing: 'subscription', licenseType: 'timed', maxDevices: 5, graceDays: 1 });

    double.updateSubscription(s.c.key, s.sub.id, (sub) => {
      sub.items[0]!.priceId = proPrice;
      sub.items[0]!.quantity = 2;
    });
    await subscriptionEvent(p, s);
    const moved = await licenseOf(p, s);
    expect(moved.row).toMatchObject({ key: row.key, product_id: pro.id, max_devices: 10 });
    expect(Number(moved.row.expires_at)).toBe(period(s).end + 1 * DAY);
    expect(moved.view.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(['device-1']);

    const unmapped = double.price(s.c.key);
    double.updateSubscription(s.c.key, s.sub.id, (sub) => {
      sub.items[0]!.priceId = unmapped;
      sub.items[0]!.quantity = 7;
    });
    await subscriptionEvent(p, s);
    expect((await licenseOf(p, s)).row).toMatchObject({ product_id: pro.id, max_devices: 10 });
    expect(await licensesOf(p.ctx.store, s.t.accountId)).toHaveLength(1);
  });

  it("a plan change gives the license the new mapping's entitlements (else its product's defaults); renewals on one plan leave an operator's edit alone", async () => {
    const s = await subscribe(p);
    const { row } = await licenseOf(p, s);
    const headers = { ...s.t.auth, 'license-key': row.key };
    expect((await call(p.ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { entitlements: ['custom'] } })).status).toBe(200);
    const renew = () =>
      double.updateSubscription(s.c.key, s.sub.id, (sub) => {
        for (const item of sub.items) [item.current_period_start, item.current_period_end] = [item.current_period_end, item.current_period_end + 30 * 86_400];
      });
    renew();
    await send(p.ctx, s.c, 'invoice.paid', stripeObjects.subscriptionInvoice({ subscription: s.sub.id, status: 'paid' }));
    expect((await licenseOf(p, s)).view.entitlements).toEqual(['custom']);

    const pro = await createProduct(p.ctx, s.t, { name: 'Cloud Studio Pro', defaultEntitlements: ['pro-default'] });
    const proPrice = double.price(s.c.key);
    await mapPrice(p, s.t, pro.id, { priceId: proPrice, billing: 'subscription', licenseType: 'timed', maxDevices: 5, entitlements: ['pro', 'sync'] });
    double.updateSubscription(s.c.key, s.sub.id, (sub) => void (sub.items[0]!.priceId = proPrice));
    await subscriptionEvent(p, s);
    const moved = await licenseOf(p, s);
    expect(moved.view).toMatchObject({ key: row.key, productId: pro.id, entitlements: ['pro', 'sync'] });
    const change = s.events.filter((e) => e.type === 'license.updated').at(-1) as { changes: Record<string, unknown> };
    expect(change.changes).toMatchObject({ productId: { to: pro.id }, entitlements: { from: ['custom'], to: ['pro', 'sync'] } });

    // The same plan again (a redelivery, a renewal): an edit made since stays.
    await call(p.ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { entitlements: ['pro', 'sync', 'beta'] } });
    await subscriptionEvent(p, s);
    renew();
    await send(p.ctx, s.c, 'invoice.paid', stripeObjects.subscriptionInvoice({ subscription: s.sub.id, status: 'paid' }));
    expect((await licenseOf(p, s)).view.entitlements).toEqual(['pro', 'sync', 'beta']);

    // A mapping without entitlements: its product's defaults, as a new license of that price gets.
    const team = await createProduct(p.ctx, s.t, { name: 'Cloud Studio Team', defaultEntitlements: ['team', 'sso'] });
    const teamPrice = double.price(s.c.key);
    await mapPrice(p, s.t, team.id, { priceId: teamPrice, billing: 'subscription', licenseType: 'timed', maxDevices: 5 });
    double.updateSubscription(s.c.key, s.sub.id, (sub) => void (sub.items[0]!.priceId = teamPrice));
    await subscriptionEvent(p, s);
    expect((await licenseOf(p, s)).view).toMatchObject({ productId: team.id, entitlements: ['team', 'sso'] });

    // An unmapped price: entitlements stay with the plan the license last had.
    double.updateSubscription(s.c.key, s.sub.id, (sub) => void (sub.items[0]!.priceId = double.price(s.c.key)));
    await subscriptionEvent(p, s);
    expect((await licenseOf(p, s)).view).toMatchObject({ productId: team.id, entitlements: ['team', 'sso'] });
  });

  it('invoice.payment_failed e-mails the customer where to pay and manage, fires subscription.payment_failed, changes no license; once per event', async () => {
    const s = await subscribe(p);
    const before = (await licenseOf(p, s)).row;
    const { signedEvent } = await import('../support/stripe-double.ts');
    const { deliver } = await import('../support/payments.ts');
    const invoice = stripeObjects.subscriptionInvoice({ subscription: s.sub.id, email: s.email });
    const event = signedEvent(s.c.secret, 'invoice.payment_failed', invoice);
    for (let i = 0; i < 3; i++) expect((await deliver(p.ctx, s.c.connectionId, event)).status).toBe(200);
    const rows = await p.ctx.store.read.all(p.ctx.store.db.selectFrom('outbox').select('payload').where('kind', '=', 'mail'));
    const mails = rows.map((r) => JSON.parse(r.payload) as { kind: string; to: string; text: string }).filter((m) => m.kind === 'payment_failed' && m.to === s.email);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text).toContain(invoice.hosted_invoice_url);
    expect(mails[0]!.text).toContain(`/portal/request?email=${encodeURIComponent(s.email)}`);
    expect(s.events.filter((e) => e.type === 'subscription.payment_failed')).toHaveLength(1);
    expect((await licenseOf(p, s)).row).toEqual(before);
  });

});

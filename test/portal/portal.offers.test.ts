import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant } from '../support/app.ts';
import { activateDevice, openPrivateSession } from '../support/mail.ts';
import { connectStripe, deliver, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { signedEvent, stripeObjects } from '../support/stripe-double.ts';

const DAY = 86_400_000;

forEachStore('portal offers', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  async function setup(email: string, expiresInDays: number) {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t, { name: 'Renewable App' });
    const price = double.price(c.key);
    const renewal = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${product.id}/offers`, headers: t.auth, json: { kind: 'renewal', name: 'Renew for a year', priceId: price, extendDays: 365 } });
    const license = await createLicense(p.ctx, t, product.id, { type: 'timed', expiresAt: new Date(Date.now() + expiresInDays * DAY).toISOString(), email });
    await activateDevice(p.ctx, t.auth, license.key, product.id, 'laptop');
    return { t, c, product, price, offerId: renewal.body.id as string, license };
  }

  it('shows a renewal to a license expiring within 30 days, creates the Checkout session for it, and its completion renews the same license', async () => {
    const email = `renew-${kind}@example.com`;
    const s = await setup(email, 10);
    const { browser } = await openPrivateSession(p.ctx, s.t.auth, email);
    expect(browser.lastHtml).toContain('Renew for a year');
    const res = await browser.request('POST', '/portal/licenses/offer', { key: s.license.key, offerId: s.offerId, csrf: browser.csrf });
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\//);
    const created = double.calls('POST', '/v1/checkout/sessions').at(-1)!;
    expect(created.form.get('mode')).toBe('payment');
    expect(created.form.get('line_items[0][price]')).toBe(s.price);
    expect(created.form.get('customer_email')).toBe(email);
    expect(created.form.get('metadata[tessera_license_key]')).toBe(s.license.key);
    expect(created.form.get('metadata[tessera_offer_id]')).toBe(s.offerId);
    expect(created.form.get('success_url')).toBe(`${p.ctx.config.baseUrl}/portal?notice=offer-paid`);

    const sessionId = (res.headers.location as string).split('/').pop()!;
    const object = { ...stripeObjects.checkoutSession({ id: sessionId, email }), metadata: { tessera_license_key: s.license.key, tessera_offer_id: s.offerId } };
    expect((await deliver(p.ctx, s.c.connectionId, signedEvent(s.c.secret, 'checkout.session.completed', object))).status).toBe(200);
    const after = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...s.t.auth, 'license-key': s.license.key } });
    expect(Date.parse(after.body.expiresAt)).toBe(Date.parse(s.license.expiresAt) + 365 * DAY);
  });

  it('no renewal far from expiry; another customer cannot choose the offer for this license (404, no session at Stripe)', async () => {
    const email = `far-${kind}@example.com`;
    const s = await setup(email, 200);
    const { browser } = await openPrivateSession(p.ctx, s.t.auth, email);
    expect(browser.lastHtml).not.toContain('Renew for a year');
    const near = await setup(`near-${kind}@example.com`, 5);
    const before = double.calls('POST', '/v1/checkout/sessions').length;
    const res = await browser.request('POST', '/portal/licenses/offer', { key: near.license.key, offerId: near.offerId, csrf: browser.csrf });
    expect(res.status).toBe(404);
    expect(double.calls('POST', '/v1/checkout/sessions')).toHaveLength(before);
  });
});

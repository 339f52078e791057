import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant } from '../support/app.ts';
import { activateDevice, openPrivateSession } from '../support/mail.ts';
import { usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { licenseOf, subscribe, subscriptionEvent } from '../support/subscriptions.ts';

forEachStore('subscriptions: license views, unlinking, the billing portal', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  it('license views carry `subscription`: the linked one in get and list, null for a license that follows none', async () => {
    const s = await subscribe(p);
    const { row, view } = await licenseOf(p, s);
    const end = new Date(s.sub.items[0]!.current_period_end * 1000).toISOString();
    expect(view.subscription).toEqual({ provider: 'stripe', id: s.sub.id, status: 'active', currentPeriodEnd: end, cancelAtPeriodEnd: false });
    const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${s.productId}/licenses`, headers: s.t.auth });
    expect(list.body.data[0].subscription).toMatchObject({ id: s.sub.id });
    const plain = await createLicense(p.ctx, s.t, s.productId);
    expect(plain.subscription).toBeNull();
    const got = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...s.t.auth, 'license-key': plain.key } });
    expect(got.body.subscription).toBeNull();
    expect(row.key).toBe(view.key);
  });

  it('DELETE /licenses/subscription unlinks: later events leave the license alone; a second unlink is a 404', async () => {
    const s = await subscribe(p);
    const { row } = await licenseOf(p, s);
    const res = await call(p.ctx, { method: 'DELETE', url: '/api/v1/licenses/subscription', headers: { ...s.t.auth, 'license-key': row.key } });
    expect(res.status).toBe(200);
    expect(res.raw.body).toBe('');
    double.updateSubscription(s.c.key, s.sub.id, (sub) => {
      sub.status = 'canceled';
      sub.ended_at = Math.floor(Date.now() / 1000);
    });
    expect((await subscriptionEvent(p, s, 'customer.subscription.deleted')).status).toBe(200);
    const after = await licenseOf(p, s);
    expect(after.row.expires_at).toBe(row.expires_at);
    expect(after.view.subscription).toBeNull();
    const again = await call(p.ctx, { method: 'DELETE', url: '/api/v1/licenses/subscription', headers: { ...s.t.auth, 'license-key': row.key } });
    expect(again.status).toBe(404);
  });

  it("unlinking: no License-Key header is a 400; another account's license is a 404 and stays linked", async () => {
    const s = await subscribe(p);
    const { row } = await licenseOf(p, s);
    expect((await call(p.ctx, { method: 'DELETE', url: '/api/v1/licenses/subscription', headers: s.t.auth })).status).toBe(400);
    const other = await createTenant(p.ctx);
    const res = await call(p.ctx, { method: 'DELETE', url: '/api/v1/licenses/subscription', headers: { ...other.auth, 'license-key': row.key } });
    expect(res.status).toBe(404);
    expect((await licenseOf(p, s)).view.subscription).toMatchObject({ id: s.sub.id });
  });

  it('the portal shows "Manage subscription" beside a linked license; it opens a Stripe billing-portal session for that customer (303)', async () => {
    const s = await subscribe(p);
    const { row } = await licenseOf(p, s);
    const { browser } = await openPrivateSession(p.ctx, s.t.auth, s.email);
    expect(browser.lastHtml).toContain('Manage subscription');
    const res = await browser.request('POST', '/portal/licenses/subscription', { key: row.key, csrf: browser.csrf });
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/^https:\/\/billing\.stripe\.com\/p\/session\//);
    const call_ = double.calls('POST', '/v1/billing_portal/sessions').at(-1)!;
    expect(call_.form.get('customer')).toBe(s.sub.customer);
    expect(call_.form.get('return_url')).toBe(`${p.ctx.config.baseUrl}/portal`);
  });

  it("another customer's session gets a 404 page and no session at Stripe; a missing CSRF token is refused; Stripe down is a try-again page", async () => {
    const s = await subscribe(p);
    const { row } = await licenseOf(p, s);
    const product = await createProduct(p.ctx, s.t);
    const theirs = await createLicense(p.ctx, s.t, product.id, { email: 'someone-else@example.com' });
    await activateDevice(p.ctx, s.t.auth, theirs.key, product.id, 'their-laptop'); // a reset form: a CSRF token on their page
    const other = await openPrivateSession(p.ctx, s.t.auth, 'someone-else@example.com');
    expect(other.browser.lastHtml).not.toContain('Manage subscription');
    const before = double.calls('POST', '/v1/billing_portal/sessions').length;
    const refused = await other.browser.request('POST', '/portal/licenses/subscription', { key: row.key, csrf: other.browser.csrf });
    expect(refused.status).toBe(404);
    expect(double.calls('POST', '/v1/billing_portal/sessions')).toHaveLength(before);

    const { browser } = await openPrivateSession(p.ctx, s.t.auth, s.email);
    const token = browser.csrf;
    expect((await browser.request('POST', '/portal/licenses/subscription', { key: row.key })).status).toBe(403);
    double.fail(503);
    try {
      const down = await browser.request('POST', '/portal/licenses/subscription', { key: row.key, csrf: token });
      expect(down.status).toBe(503);
      expect(down.body).toContain('try again');
    } finally {
      double.heal();
    }
  });
});

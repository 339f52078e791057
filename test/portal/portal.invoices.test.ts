import { expect, it } from 'vitest';
import { createProduct, createTenant } from '../support/app.ts';
import { openPrivateSession } from '../support/mail.ts';
import { connectStripe, licensesOf, mapPrice, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { stripeObjects } from '../support/stripe-double.ts';

forEachStore('portal invoices', (kind) => {
  const p = usePaymentsApp(kind);

  async function purchase(email: string, withInvoice = true) {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t, { name: 'Invoice App' });
    const price = p.double.price(c.key);
    await mapPrice(p, t, product.id, { priceId: price });
    const invoice = withInvoice ? p.double.invoice(c.key) : null;
    const session = p.double.session(c.key, [{ priceId: price }]);
    await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email, invoice }));
    const [license] = await licensesOf(p.ctx.store, t.accountId);
    const row = await p.ctx.store.read.first(p.ctx.store.db.selectFrom('purchases').select('id').where('session_id', '=', session));
    return { t, c, invoice, license: license!, purchaseId: row!.id };
  }

  it('the buyer sees "Download invoice" beside the license; it fetches the invoice from Stripe at click time and redirects 303 to its PDF', async () => {
    const email = `Invoice-Buyer-${kind}@Example.com`;
    const { t, invoice, purchaseId } = await purchase(email);
    const { browser } = await openPrivateSession(p.ctx, t.auth, email.toLowerCase());
    expect(browser.lastHtml).toContain(`href="/portal/invoices/${purchaseId}"`);
    expect(browser.lastHtml).toContain('Download invoice');
    const before = p.double.calls('GET', `/v1/invoices/${invoice}`).length;
    const res = await browser.request('GET', `/portal/invoices/${purchaseId}`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(new RegExp(`^https://pay\\.stripe\\.com/invoice/acct_.+/test_${invoice}/pdf$`));
    expect(p.double.calls('GET', `/v1/invoices/${invoice}`)).toHaveLength(before + 1);
  });

  it("another customer's portal session gets a 404 for it, and no link; so does another operator's session for the same address", async () => {
    const email = `only-buyer-${kind}@example.com`;
    const { t, purchaseId } = await purchase(email);
    const { browser: other } = await openPrivateSession(p.ctx, t.auth, `someone-else-${kind}@example.com`);
    expect(other.lastHtml).not.toContain('Download invoice');
    const res = await other.request('GET', `/portal/invoices/${purchaseId}`);
    expect(res.status).toBe(404);
    expect(res.body).toContain('That invoice is not available in your portal.');
    expect(res.headers.location).toBeUndefined();

    const otherOperator = await createTenant(p.ctx);
    const { browser: scoped } = await openPrivateSession(p.ctx, otherOperator.auth, email);
    expect((await scoped.request('GET', `/portal/invoices/${purchaseId}`)).status).toBe(404);
  });

  it('a purchase without an invoice shows no link and its URL is a 404; without a session it goes to the request page', async () => {
    const email = `no-invoice-${kind}@example.com`;
    const { t, purchaseId } = await purchase(email, false);
    const { browser } = await openPrivateSession(p.ctx, t.auth, email);
    expect(browser.lastHtml).toContain('Invoice App');
    expect(browser.lastHtml).not.toContain('Download invoice');
    expect((await browser.request('GET', `/portal/invoices/${purchaseId}`)).status).toBe(404);
    const anonymous = await p.ctx.app.inject({ method: 'GET', url: `/portal/invoices/${purchaseId}` });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toMatch(/^\/portal\/request/);
  });
});

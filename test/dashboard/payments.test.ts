import { describe, expect, it } from 'vitest';
import { call, createProduct, createTenant, type Tenant, type TestContext } from '../support/app.ts';
import { signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { describeFormCases, type FormCase } from '../support/dashboard-forms.ts';
import { connectStripe, mapPrice, send, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { type StripeDouble, stripeObjects } from '../support/stripe-double.ts';

const XSS = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`;
let n = 0;

const connections = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('payment_connections').selectAll().where('account_id', '=', t.accountId));
const mappings = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('price_mappings').selectAll().where('account_id', '=', t.accountId));

function cases(double: StripeDouble): FormCase[] {
  const connected = async (ctx: TestContext, t: Tenant) => {
    const c = await connectStripe({ ctx, double }, t);
    return { c, product: await createProduct(ctx, t), priceId: double.price(c.key) };
  };
  return [
    {
      name: 'connect Stripe',
      prepare: async (ctx, t) => ({
        page: '/dashboard/payments',
        action: '/dashboard/payments/connect',
        good: { restrictedKey: double.account() },
        bad: { fields: { restrictedKey: 'pk_test_publishable' }, message: 'Restricted key is not in the expected format.' },
        state: connections(ctx, t),
        owned: false,
      }),
    },
    {
      name: 'disconnect Stripe',
      prepare: async (ctx, t) => {
        await connectStripe({ ctx, double }, t);
        return { page: '/dashboard/payments', action: '/dashboard/payments/disconnect', good: {}, state: connections(ctx, t), owned: false, destructive: true };
      },
    },
    {
      name: 'map a price',
      prepare: async (ctx, t) => {
        const { product, priceId } = await connected(ctx, t);
        return {
          page: '/dashboard/payments',
          action: '/dashboard/payments/prices',
          good: { productId: product.id, priceId, maxDevices: '2', mode: 'offset', offsetDays: '30', fixedExpiresAt: '' },
          bad: { fields: { productId: product.id, priceId, maxDevices: '0', mode: 'perpetual' }, message: 'Devices per unit bought must be at least 1.' },
          state: mappings(ctx, t),
          owned: true,
        };
      },
    },
    {
      name: 'remove a price mapping',
      prepare: async (ctx, t) => {
        const { product, priceId } = await connected(ctx, t);
        await mapPrice({ ctx, double }, t, product.id, { priceId });
        return { page: '/dashboard/payments', action: '/dashboard/payments/prices/remove', good: { productId: product.id, priceId }, state: mappings(ctx, t), owned: true, destructive: true };
      },
    },
  ];
}

forEachStore('dashboard payments', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;

  describeFormCases(p.ctx, cases(double));

  const signedInWithProduct = async () => {
    const t = await createTenant(p.ctx);
    const browser = await signIn(p.ctx, t.email);
    const product = await createProduct(p.ctx, t, { name: 'Pro' });
    return { t, browser, product };
  };

  describe('connection', () => {
    it('says what to do when not connected; shows mode and endpoint once connected, never the key', async () => {
      const { t, browser } = await signedInWithProduct();
      const empty = await browser.request('GET', '/dashboard/payments');
      expect(textOf(empty.body)).toContain('Stripe is not connected');
      expect(empty.body).toMatch(/<input id="f-restrictedKey" name="restrictedKey" type="password"/);
      const key = double.account();
      const res = await browser.request('POST', '/dashboard/payments/connect', { restrictedKey: key, csrf: browser.csrf });
      expect(res.status).toBe(303);
      const page = await browser.request('GET', res.headers.location as string);
      const conn = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/stripe', headers: t.auth });
      expect(textOf(page.body)).toContain('Stripe is connected');
      expect(textOf(page.body)).toContain('Test');
      expect(page.body).toContain(conn.body.webhookEndpointId);
      expect(page.body).not.toContain(key);
    });

    it("shows Stripe's message for a refused key in the form, stores nothing and never echoes the key", async () => {
      const { t, browser } = await signedInWithProduct();
      await browser.request('GET', '/dashboard/payments');
      const res = await browser.request('POST', '/dashboard/payments/connect', { restrictedKey: 'rk_test_unknownkey123456', csrf: browser.csrf });
      expect(res.status).toBe(400);
      expect(textOf(res.body)).toContain('Invalid API Key provided');
      expect(res.body).toContain('aria-invalid="true"');
      expect(res.body).not.toContain('rk_test_unknownkey123456');
      expect(await connections(p.ctx, t)()).toEqual([]);
    });
  });

  describe('price mappings', () => {
    it('maps perpetual, timed by days and timed to a date; lists them with their rule', async () => {
      const { t, browser, product } = await signedInWithProduct();
      const c = await connectStripe(p, t);
      await browser.request('GET', '/dashboard/payments');
      const [a, b, d] = [double.price(c.key), double.price(c.key), double.price(c.key)];
      const post = (fields: Record<string, string>) => browser.request('POST', '/dashboard/payments/prices', { productId: product.id, maxDevices: '1', ...fields, csrf: browser.csrf });
      expect((await post({ priceId: a, mode: 'perpetual', offsetDays: '9', fixedExpiresAt: '2030-01-01' })).status).toBe(303);
      expect((await post({ priceId: b, mode: 'offset', offsetDays: '365' })).status).toBe(303);
      expect((await post({ priceId: d, mode: 'fixed', fixedExpiresAt: '2031-06-30' })).status).toBe(303);
      const listed = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth });
      const byPrice = Object.fromEntries((listed.body as { priceId: string }[]).map((m) => [m.priceId, m]));
      expect(byPrice[a]).toMatchObject({ licenseType: 'perpetual', offsetDays: null, fixedExpiresAt: null });
      expect(byPrice[b]).toMatchObject({ licenseType: 'timed', offsetDays: 365, fixedExpiresAt: null });
      expect(byPrice[d]).toMatchObject({ licenseType: 'timed', offsetDays: null, fixedExpiresAt: '2031-06-30T00:00:00.000Z' });
      const page = textOf((await browser.request('GET', '/dashboard/payments')).body);
      expect(page).toContain('Perpetual');
      expect(page).toContain('Expires 365 days after purchase');
    });

    it('shows an unknown price, a duplicate and a missing connection as form errors, storing nothing', async () => {
      const { t, browser, product } = await signedInWithProduct();
      await browser.request('GET', '/dashboard/payments');
      const post = (fields: Record<string, string>) => browser.request('POST', '/dashboard/payments/prices', { productId: product.id, maxDevices: '1', mode: 'perpetual', ...fields, csrf: browser.csrf });
      const notConnected = await post({ priceId: 'price_x' });
      expect(notConnected.status).toBe(400);
      expect(textOf(notConnected.body)).toContain('Connect a stripe account first');
      const c = await connectStripe(p, t);
      const unknown = await post({ priceId: 'price_doesnotexist' });
      expect(unknown.status).toBe(400);
      expect(textOf(unknown.body)).toContain('Stripe price ID, Lemon Squeezy variant ID or Polar product ID no such price at stripe.');
      const priceId = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId });
      const before = await mappings(p.ctx, t)();
      const duplicate = await post({ priceId });
      expect(duplicate.status).toBe(400);
      expect(duplicate.body).toMatch(/id="f-priceId-error"[^>]*>[^<]*is mapped to product [^<]* already/);
      const timedWithoutRule = await post({ priceId: double.price(c.key), mode: 'offset', offsetDays: '' });
      expect(timedWithoutRule.status).toBe(400);
      expect(textOf(timedWithoutRule.body)).toContain('Days until expiry (timed, days after purchase) must be a whole number.');
      expect(await mappings(p.ctx, t)()).toEqual(before);
      const hostile = await post({ priceId: XSS });
      expect(hostile.status).toBe(400);
      expect(hostile.body).not.toContain('<script>alert');
    });
  });

  describe('purchases', () => {
    it('lists a purchase from a signed event with its amount, status and license link; the invoice button redirects to the PDF fetched now', async () => {
      const { t, browser, product } = await signedInWithProduct();
      const c = await connectStripe(p, t);
      const priceId = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId });
      const session = double.session(c.key, [{ priceId }]);
      const invoice = double.invoice(c.key);
      const email = `buyer${++n}@example.com`;
      expect((await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email, invoice, amountTotal: 12345 }))).status).toBe(200);
      const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data;
      const [purchase] = purchases;
      const page = await browser.request('GET', '/dashboard/payments/purchases');
      const text = textOf(page.body);
      expect(text).toContain(email);
      expect(text).toContain('$123.45');
      expect(text).toContain('Fulfilled');
      expect(page.body).toContain(`href="/dashboard/licenses/${purchase.licenseKeys[0]}"`);
      const before = double.calls('GET', `/v1/invoices/${invoice}`).length;
      const pdf = await browser.request('GET', `/dashboard/payments/purchases/${purchase.id}/invoice`);
      expect(pdf.status).toBe(303);
      expect(pdf.headers.location).toMatch(/^https:\/\/pay\.stripe\.com\/invoice\/.+\/pdf$/);
      expect(double.calls('GET', `/v1/invoices/${invoice}`)).toHaveLength(before + 1);
      // Another account's purchase is not found; so is a purchase without an invoice.
      const intruder = await signIn(p.ctx, (await createTenant(p.ctx)).email);
      expect((await intruder.request('GET', `/dashboard/payments/purchases/${purchase.id}/invoice`)).status).toBe(404);
      expect(textOf((await intruder.request('GET', '/dashboard/payments/purchases')).body)).not.toContain(email);
      expect((await new WebBrowser(p.ctx).request('GET', `/dashboard/payments/purchases/${purchase.id}/invoice`)).headers.location).toMatch(/^\/dashboard\/login/);
    });

    it('says so on the page when Stripe fails at click time or while connecting, changing nothing', async () => {
      const { t, browser, product } = await signedInWithProduct();
      const c = await connectStripe(p, t);
      const priceId = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId });
      await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(c.key, [{ priceId }]), email: `down${++n}@example.com`, invoice: double.invoice(c.key) }));
      const [purchase] = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data;
      const before = await connections(p.ctx, t)();
      double.fail(500);
      try {
        const res = await browser.request('GET', `/dashboard/payments/purchases/${purchase.id}/invoice`);
        expect(res.status).toBe(502);
        expect(textOf(res.body)).toContain('The invoice could not be fetched: Stripe is unreachable or failed');
        await browser.request('GET', '/dashboard/payments');
        const connect = await browser.request('POST', '/dashboard/payments/connect', { restrictedKey: double.account(), csrf: browser.csrf });
        expect(connect.status).toBe(502);
        expect(textOf(connect.body)).toContain('Stripe is unreachable or failed');
      } finally {
        double.heal();
      }
      expect(await connections(p.ctx, t)()).toEqual(before);
    });

    it('pages purchases newest first by keyset', async () => {
      const { t, browser, product } = await signedInWithProduct();
      const c = await connectStripe(p, t);
      const priceId = double.price(c.key);
      await mapPrice(p, t, product.id, { priceId });
      const emails: string[] = [];
      for (let i = 0; i < 27; i++) {
        const email = `page${++n}@example.com`;
        emails.push(email);
        await send(p.ctx, c, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(c.key, [{ priceId }]), email }));
      }
      const first = await browser.request('GET', '/dashboard/payments/purchases');
      const next = /href="(\/dashboard\/payments\/purchases\?cursor=[^"#]+)/.exec(first.body)![1]!;
      const second = await browser.request('GET', next.replace(/&amp;/g, '&'));
      const shown = (body: string) => emails.filter((e) => body.includes(e));
      expect(shown(first.body)).toHaveLength(25);
      expect(shown(second.body)).toHaveLength(2);
      expect(shown(first.body)).toContain(emails[26]);
      expect(shown(second.body)).toEqual([emails[0], emails[1]]);
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { describeFormCases, type FormCase } from '../support/dashboard-forms.ts';
import { PolarDouble, polarObjects, polarSignedEvent } from '../support/polar-double.ts';
import { forEachStore } from '../support/stores.ts';

const connections = (ctx: TestContext, t: Tenant) => () =>
  ctx.store.read.all(ctx.store.db.selectFrom('payment_connections').selectAll().where('account_id', '=', t.accountId).where('provider', '=', 'polar'));

async function connect(ctx: TestContext, double: PolarDouble, t: Tenant) {
  const org = double.organization();
  const res = await call(ctx, { method: 'PUT', url: '/api/v1/payments/polar', headers: t.auth, json: { accessToken: org.token, organizationId: org.organizationId, sandbox: true } });
  if (res.status !== 200) throw new Error(`connect: ${res.status}`);
  return { ...org, endpointId: res.body.webhookEndpointId as string };
}

function cases(double: PolarDouble): FormCase[] {
  return [
    {
      name: 'connect Polar',
      prepare: async (ctx, t) => {
        const org = double.organization();
        return {
          page: '/dashboard/payments',
          action: '/dashboard/payments/polar/connect',
          good: { accessToken: org.token, organizationId: org.organizationId, sandbox: 'on' },
          bad: { fields: { accessToken: org.token, organizationId: 'not-a-uuid' }, message: 'Organization ID is not valid.' },
          state: connections(ctx, t),
          owned: false,
        };
      },
    },
    {
      name: 'disconnect Polar',
      prepare: async (ctx, t) => {
        await connect(ctx, double, t);
        return { page: '/dashboard/payments', action: '/dashboard/payments/polar/disconnect', good: {}, state: connections(ctx, t), owned: false, destructive: true };
      },
    },
  ];
}

forEachStore('dashboard payments: Polar', (kind) => {
  const double = new PolarDouble();
  const env: Record<string, string> = {};
  beforeAll(async () => {
    await double.start();
    env.POLAR_API_URL = double.url;
  });
  const ctx = useTestApp(kind, { env });
  afterAll(() => double.stop());

  describeFormCases(ctx, cases(double));

  describe('the Polar connection on the payments page', () => {
    it('says what to do, connects, shows sandbox mode and the endpoint, never the token', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const empty = await browser.request('GET', '/dashboard/payments');
      expect(textOf(empty.body)).toContain('Polar is not connected');
      const org = double.organization();
      const res = await browser.request('POST', '/dashboard/payments/polar/connect', { accessToken: org.token, organizationId: org.organizationId, sandbox: 'on', csrf: browser.csrf });
      expect(res.status).toBe(303);
      const page = await browser.request('GET', res.headers.location as string);
      expect(textOf(page.body)).toContain('Polar is connected');
      expect(textOf(page.body)).toContain('Sandbox');
      const conn = await call(ctx, { method: 'GET', url: '/api/v1/payments/polar', headers: t.auth });
      expect(page.body).toContain(conn.body.webhookEndpointId);
      expect(page.body).not.toContain(org.token);
    });

    it("a token Polar refuses is shown in the form, nothing stored, the token never echoed", async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', '/dashboard/payments');
      const org = double.organization();
      const res = await browser.request('POST', '/dashboard/payments/polar/connect', { accessToken: 'polar_oat_refused12345', organizationId: org.organizationId, csrf: browser.csrf });
      expect(res.status).toBe(400);
      expect(textOf(res.body)).toContain('Polar refused the access token');
      expect(res.body).not.toContain('polar_oat_refused12345');
      expect(await connections(ctx, t)()).toEqual([]);
    });

    it('maps a Polar product through the mapping form and lists it as Polar', async () => {
      const t = await createTenant(ctx);
      const c = await connect(ctx, double, t);
      const product = await createProduct(ctx, t, { name: 'Pro' });
      const polarProduct = double.addProduct(c.token);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', '/dashboard/payments');
      const res = await browser.request('POST', '/dashboard/payments/prices', { productId: product.id, provider: 'polar', priceId: polarProduct, maxDevices: '1', mode: 'perpetual', csrf: browser.csrf });
      expect(res.status).toBe(303);
      const listed = await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth });
      expect(listed.body).toMatchObject([{ provider: 'polar', priceId: polarProduct }]);
      expect(textOf((await browser.request('GET', '/dashboard/payments')).body)).toContain(`${polarProduct} (polar)`);
    });

    it("an offer sold through Polar is added on the product's Offers page", async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t, { name: 'Pro' });
      const browser = await signIn(ctx, t.email);
      const offersPage = `/dashboard/products/${product.id}/offers`;
      await browser.request('GET', offersPage);
      const polarProduct = '0f8b1c9e-0000-4000-8000-0000000000aa';
      const res = await browser.request('POST', offersPage, { kind: 'renewal', name: 'Another year', provider: 'polar', priceId: polarProduct, extendDays: '365', csrf: browser.csrf });
      expect(res.status).toBe(303);
      const listed = await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/offers`, headers: t.auth });
      expect(listed.body).toMatchObject([{ provider: 'polar', priceId: polarProduct, extendDays: 365 }]);
      expect(textOf((await browser.request('GET', offersPage)).body)).toContain(`${polarProduct} (polar)`);
    });

    it('the purchases page names the provider of each purchase', async () => {
      const t = await createTenant(ctx);
      const c = await connect(ctx, double, t);
      const product = await createProduct(ctx, t);
      const polarProduct = double.addProduct(c.token);
      await call(ctx, { method: 'POST', url: `/api/v1/products/${product.id}/prices`, headers: t.auth, json: { provider: 'polar', priceId: polarProduct, maxDevices: 1, licenseType: 'perpetual' } });
      const endpoint = double.endpoints.get(c.endpointId)!;
      const order = double.addOrder(c.token, { productId: polarProduct, email: 'shown@example.com' });
      const signed = polarSignedEvent(endpoint.secret, 'order.paid', polarObjects.order(order, c.organizationId));
      const delivered = await call(ctx, { method: 'POST', url: new URL(endpoint.url).pathname, headers: { 'content-type': 'application/json', ...signed.headers }, payload: signed.payload });
      expect(delivered.status).toBe(200);
      const browser = await signIn(ctx, t.email);
      const page = textOf((await browser.request('GET', '/dashboard/payments/purchases')).body);
      expect(page).toContain('shown@example.com');
      expect(page).toMatch(/Fulfilled New\s*Polar/);
    });
  });
});

import { describe, expect, it } from 'vitest';
import { call, createProduct, createTenant, type Tenant, type TestContext } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { describeFormCases, type FormCase } from '../support/dashboard-forms.ts';
import { connectLemonSqueezy, type LemonSqueezyDouble, useLemonSqueezyApp } from '../support/lemonsqueezy-double.ts';
import { forEachStore } from '../support/stores.ts';

const connections = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('payment_connections').selectAll().where('account_id', '=', t.accountId));
const mappings = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('price_mappings').selectAll().where('account_id', '=', t.accountId));

function cases(double: LemonSqueezyDouble): FormCase[] {
  return [
    {
      name: 'connect Lemon Squeezy',
      prepare: async (ctx, t) => ({
        page: '/dashboard/payments',
        action: '/dashboard/payments/lemonsqueezy/connect',
        good: double.account(),
        bad: { fields: { apiKey: double.account().apiKey, storeId: 'abc' }, message: 'Store ID is not in the expected format.' },
        state: connections(ctx, t),
        owned: false,
      }),
    },
    {
      name: 'disconnect Lemon Squeezy',
      prepare: async (ctx, t) => {
        await connectLemonSqueezy({ ctx, double }, t);
        return { page: '/dashboard/payments', action: '/dashboard/payments/lemonsqueezy/disconnect', good: {}, state: connections(ctx, t), owned: false, destructive: true };
      },
    },
    {
      name: 'map a Lemon Squeezy variant',
      prepare: async (ctx, t) => {
        const c = await connectLemonSqueezy({ ctx, double }, t);
        const product = await createProduct(ctx, t);
        const variant = double.variant(c.storeId);
        return {
          page: '/dashboard/payments',
          action: '/dashboard/payments/prices',
          good: { productId: product.id, provider: 'lemonsqueezy', priceId: variant, maxDevices: '2', mode: 'perpetual' },
          bad: { fields: { productId: product.id, provider: 'lemonsqueezy', priceId: variant, maxDevices: '0', mode: 'perpetual' }, message: 'Devices per unit bought must be at least 1.' },
          state: mappings(ctx, t),
          owned: true,
        };
      },
    },
  ];
}

forEachStore('dashboard payments: Lemon Squeezy', (kind) => {
  const p = useLemonSqueezyApp(kind);
  const { double } = p;

  describeFormCases(p.ctx, cases(double));

  describe('connection', () => {
    it('says what to do when not connected; shows mode and webhook once connected, never the key; a variant maps with its provider', async () => {
      const t = await createTenant(p.ctx);
      const browser = await signIn(p.ctx, t.email);
      const empty = await browser.request('GET', '/dashboard/payments');
      expect(textOf(empty.body)).toContain('Lemon Squeezy is not connected');
      expect(empty.body).toMatch(/<input id="f-apiKey" name="apiKey" type="password"/);
      const account = double.account();
      const res = await browser.request('POST', '/dashboard/payments/lemonsqueezy/connect', { ...account, csrf: browser.csrf });
      expect(res.status).toBe(303);
      const page = await browser.request('GET', res.headers.location as string);
      const conn = await call(p.ctx, { method: 'GET', url: '/api/v1/payments/lemonsqueezy', headers: t.auth });
      expect(textOf(page.body)).toContain('Lemon Squeezy is connected');
      expect(page.body).toContain(conn.body.webhookEndpointId);
      expect(page.body).not.toContain(account.apiKey);
      const product = await createProduct(p.ctx, t, { name: 'Pro' });
      const variant = double.variant(account.storeId);
      const mapped = await browser.request('POST', '/dashboard/payments/prices', { productId: product.id, provider: 'lemonsqueezy', priceId: variant, maxDevices: '1', mode: 'perpetual', csrf: browser.csrf });
      expect(mapped.status).toBe(303);
      const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/prices`, headers: t.auth });
      expect(list.body).toMatchObject([{ provider: 'lemonsqueezy', priceId: variant }]);
      expect(textOf((await browser.request('GET', '/dashboard/payments')).body)).toContain(`${variant} (lemonsqueezy)`);
    });

    it('a refused key is shown beside the field, a store the key cannot see beside the store; nothing stored, the key never echoed', async () => {
      const t = await createTenant(p.ctx);
      const browser = await signIn(p.ctx, t.email);
      await browser.request('GET', '/dashboard/payments');
      const refused = await browser.request('POST', '/dashboard/payments/lemonsqueezy/connect', { apiKey: 'unknown_key_12345', storeId: '1', csrf: browser.csrf });
      expect(refused.status).toBe(400);
      expect(textOf(refused.body)).toContain('Lemon Squeezy refused the key');
      expect(refused.body).not.toContain('unknown_key_12345');
      const foreign = await browser.request('POST', '/dashboard/payments/lemonsqueezy/connect', { apiKey: double.account().apiKey, storeId: double.account().storeId, csrf: browser.csrf });
      expect(foreign.status).toBe(400);
      expect(textOf(foreign.body)).toContain('has no store');
      expect(await connections(p.ctx, t)()).toEqual([]);
    });
  });
});

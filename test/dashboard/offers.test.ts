import { expect, it } from 'vitest';
import { createProduct } from '../support/app.ts';
import { signIn } from '../support/dashboard.ts';
import { describeFormCases } from '../support/dashboard-forms.ts';
import { usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('dashboard: offers', (kind) => {
  const p = usePaymentsApp(kind);
  const offers = (accountId: string) => () => p.ctx.store.read.all(p.ctx.store.db.selectFrom('offers').selectAll().where('account_id', '=', accountId));

  describeFormCases(p.ctx, [
    {
      name: 'add an offer',
      prepare: async (ctx, t) => {
        const product = await createProduct(ctx, t);
        return {
          page: `/dashboard/products/${product.id}/offers`,
          action: `/dashboard/products/${product.id}/offers`,
          good: { kind: 'renewal', name: 'One more year', priceId: 'price_renew', extendDays: '365' },
          bad: { fields: { kind: 'renewal', name: 'One more year', priceId: 'price_renew', extendDays: '0' }, message: 'Renewal: days added must be at least 1.' },
          state: offers(t.accountId),
          owned: true,
        };
      },
    },
  ]);

  it('the product page links to its offers; the offers page lists and removes them', async () => {
    const { createTenant } = await import('../support/app.ts');
    const t = await createTenant(p.ctx);
    const product = await createProduct(p.ctx, t, { name: 'Offer App' });
    const browser = await signIn(p.ctx, t.email);
    expect((await browser.request('GET', `/dashboard/products/${product.id}`)).body).toContain(`/dashboard/products/${product.id}/offers`);
    await browser.request('GET', `/dashboard/products/${product.id}/offers`);
    const added = await browser.request('POST', `/dashboard/products/${product.id}/offers`, { kind: 'upgrade', name: 'Ten seats', priceId: 'price_seats', maxDevices: '10', csrf: browser.csrf });
    expect(added.status).toBe(303);
    const page = await browser.request('GET', `/dashboard/products/${product.id}/offers`);
    expect(page.body).toContain('Upgrade: 10 devices');
    const [row] = await offers(t.accountId)();
    expect((await browser.request('POST', `/dashboard/products/${product.id}/offers/remove`, { offerId: row!.id, csrf: browser.csrf })).status).toBe(303);
    expect(await offers(t.accountId)()).toHaveLength(0);
  });

  it("an upgrade's entitlements: typed with spaces or commas, shown in the list; a bad code is the form again with the field's error, nothing stored", async () => {
    const { createTenant } = await import('../support/app.ts');
    const t = await createTenant(p.ctx);
    const product = await createProduct(p.ctx, t, { name: 'Feature App' });
    const browser = await signIn(p.ctx, t.email);
    await browser.request('GET', `/dashboard/products/${product.id}/offers`);
    const form = { kind: 'upgrade', name: 'Pro features', priceId: 'price_pro', csrf: browser.csrf };
    const bad = await browser.request('POST', `/dashboard/products/${product.id}/offers`, { ...form, entitlements: 'pro Export' });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('name="entitlements" type="text" value="pro Export" aria-invalid="true"');
    expect(bad.body).toContain('Upgrade: entitlements is not in the expected format.');
    expect(bad.body).toContain('value="pro Export"');
    expect(await offers(t.accountId)()).toHaveLength(0);
    const added = await browser.request('POST', `/dashboard/products/${product.id}/offers`, { ...form, entitlements: 'pro, export.pdf' });
    expect(added.status).toBe(303);
    expect((await offers(t.accountId)())[0]).toMatchObject({ entitlements: 'pro export.pdf' });
    expect((await browser.request('GET', `/dashboard/products/${product.id}/offers`)).body).toContain('Upgrade: entitlements: pro export.pdf');
  });
});

import { expect, it } from 'vitest';
import { signIn, textOf } from '../support/dashboard.ts';
import { describeFormCases } from '../support/dashboard-forms.ts';
import { usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { licenseOf, subscribe } from '../support/subscriptions.ts';

forEachStore('dashboard: subscriptions', (kind) => {
  const p = usePaymentsApp(kind);

  it("the license page shows the license's subscription and its purchase's kind", async () => {
    const s = await subscribe(p);
    const { row } = await licenseOf(p, s);
    const browser = await signIn(p.ctx, s.t.email);
    const page = await browser.request('GET', `/dashboard/licenses/${row.key}`);
    expect(page.status).toBe(200);
    expect(textOf(page.body)).toContain(`Subscription ${s.sub.id} (stripe) · active`);
    expect(page.body).toContain('Unlink subscription');
  });

  describeFormCases(p.ctx, [
    {
      name: 'unlink a subscription',
      prepare: async (ctx, t) => {
        const s = await subscribe(p, { tenant: t });
        const { row } = await licenseOf(p, s);
        return {
          page: `/dashboard/licenses/${row.key}`,
          action: `/dashboard/licenses/${row.key}/subscription/unlink`,
          good: {},
          state: () => ctx.store.read.all(ctx.store.db.selectFrom('license_subscriptions').selectAll().where('account_id', '=', t.accountId)),
          owned: true,
          destructive: true,
        };
      },
    },
  ]);
});

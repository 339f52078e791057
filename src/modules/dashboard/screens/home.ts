import { html, type SafeHtml } from '../../../http/html.ts';
import type { AccountOverview } from '../../overview/service.ts';
import { activityChart } from '../chart.ts';
import { render, type Screen } from '../screen.ts';
import { emptyState, pageHead, when } from '../views.ts';
import { auditTable } from './license-audit.ts';
import { formatAmount } from './purchases.ts';

/** Entries of the latest changes shown on the overview; the audit log page has them all. */
const LATEST = 8;

const number = (n: number) => n.toLocaleString('en-US');

/** A figure that leads to the list behind it. */
const fact = (label: string, value: string, href?: string) => html`<div><dt>${label}</dt><dd>${href ? html`<a href="${href}">${value}</a>` : value}</dd></div>`;

function business(o: AccountOverview): SafeHtml {
  const t = o.tally;
  const licenses = t
    ? html`${fact('Licenses', number(t.licenses), '/dashboard/licenses')}${fact('Active', number(t.active), '/dashboard/licenses?status=active')}${fact('Expired', number(t.expired), '/dashboard/licenses?status=expired')}${fact('Revoked', number(t.revoked), '/dashboard/licenses?status=revoked')}${fact('Active devices', number(t.activeDevices))}`
    : html`<div><dt>Licenses</dt><dd>Counting… <a href="/dashboard">reload</a> in a moment</dd></div>`;
  const { last7Days: d7, last30Days: d30 } = o.activity;
  const revenue =
    o.revenue.paid.length === 0
      ? fact('Revenue, 30 days', 'No purchases', '/dashboard/payments/purchases')
      : html`${o.revenue.paid.map((r) => fact(`Revenue in ${r.currency}, 30 days`, `${formatAmount(r.amount, r.currency)} · ${number(r.purchases)} ${r.purchases === 1 ? 'purchase' : 'purchases'}`, '/dashboard/payments/purchases'))}`;
  return html`<section class="card spaced" aria-labelledby="glance-title"><h2 id="glance-title">At a glance</h2>
<dl class="facts">${licenses}</dl>
<dl class="facts spaced">${fact('Activations, 7 days', number(d7.activations), '/dashboard/activity')}${fact('Activations, 30 days', number(d30.activations), '/dashboard/activity')}${fact('Validations, 7 days', number(d7.validations), '/dashboard/activity')}${fact('Validations, 30 days', number(d30.validations), '/dashboard/activity')}</dl>
<dl class="facts spaced">${revenue}${o.revenue.refundedOrDisputed > 0 ? fact('Refunded or disputed, 30 days', number(o.revenue.refundedOrDisputed), '/dashboard/payments/purchases') : ''}</dl>
${t ? html`<p class="hint">Licenses and devices counted ${when(t.countedAt)} (at most a minute ago).</p>` : ''}
</section>`;
}

/** The start page: what to do next until the account is ready to sell, then the business at a glance, the latest changes and the activity. */
export const homeScreen: Screen = {
  area: 'overview',
  nav: { label: 'Overview', href: '/dashboard' },
  routes: async (app, { services }) => {
    app.get('/dashboard', async (req, reply) => {
      const { principal, account } = req.dashboard;
      const [products, apiKeys, overview] = await Promise.all([
        services.products.list(principal),
        services.apiKeys.list(principal),
        services.overview.overview(principal, { latest: LATEST }),
      ]);
      const keys = apiKeys.filter((k) => k.revokedAt === null);
      const licenses = overview.tally ? overview.tally.licenses > 0 : (await services.licenses.search(principal, { limit: 1 })).data.length > 0;
      const tokens = products.length > 0 && (await services.licenseTokens.getConfig(principal, products[0]!.id)).enabled;
      const steps = [
        { done: products.length > 0, text: 'Create a product', href: '/dashboard/products/new' },
        { done: tokens, text: 'Turn on license tokens (offline checks)', href: products[0] ? `/dashboard/products/${products[0].id}/tokens` : '/dashboard/products' },
        { done: keys.length > 0, text: 'Create an API key for your store', href: '/dashboard/api-keys' },
        { done: licenses, text: 'Create a license', href: '/dashboard/licenses/new' },
      ];
      const open = steps.filter((s) => !s.done).length;
      const checklist =
        open === 0
          ? ''
          : html`<section class="card" aria-labelledby="start-title"><h2 id="start-title">Get ready to sell</h2><p class="hint">${open} of ${steps.length} steps left.</p>
<ul class="checklist">${steps.map(
              (s) => html`<li class="${s.done ? 'done' : ''}"><span class="mark" aria-hidden="true">${s.done ? '✓' : '○'}</span>${s.done ? html`<span>${s.text} <span class="sr-only">(done)</span></span>` : html`<a href="${s.href}">${s.text}</a>`}</li>`,
            )}</ul></section>`;
      const latest = html`<section class="spaced" aria-labelledby="latest-title"><h2 id="latest-title">Latest changes</h2>${
        overview.latest.length === 0
          ? emptyState('No license has changed yet.')
          : await auditTable(services, principal, account.email, overview.latest, { caption: 'Latest changes', withLicense: true })
      }<p><a href="/dashboard/audit">See the whole audit log</a></p></section>`;
      return render(req, reply, {
        title: 'Overview',
        section: '/dashboard',
        content: html`${pageHead('Overview', `${products.length === 1 ? '1 product' : `${products.length} products`} · signed in as ${account.email}`)}${checklist}${business(overview)}${latest}${activityChart(overview.activity.days, 'Activity of all products')}`,
      });
    });
  },
};

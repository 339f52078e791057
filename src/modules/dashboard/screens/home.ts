import { html } from '../../../http/html.ts';
import { activityChart } from '../chart.ts';
import { render, type Screen } from '../screen.ts';
import { pageHead } from '../views.ts';

/** The start page: what to do next until the account is ready to sell, then the activity. */
export const homeScreen: Screen = {
  area: 'overview',
  nav: { label: 'Overview', href: '/dashboard' },
  routes: async (app, { services }) => {
    app.get('/dashboard', async (req, reply) => {
      const { principal } = req.dashboard;
      const products = await services.products.list(principal);
      const keys = (await services.apiKeys.list(principal)).filter((k) => k.revokedAt === null);
      const licenses = (await services.licenses.search(principal, { limit: 1 })).data.length > 0;
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
      const days = await services.activity.lastDays(principal);
      return render(req, reply, {
        title: 'Overview',
        section: '/dashboard',
        content: html`${pageHead('Overview', `${products.length === 1 ? '1 product' : `${products.length} products`} · signed in as ${req.dashboard.account.email}`)}${checklist}${activityChart(days, 'Activity of all products')}`,
      });
    });
  },
};

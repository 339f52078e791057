import { html } from '../../../http/html.ts';
import { activityChart } from '../chart.ts';
import { render, type Screen } from '../screen.ts';
import { emptyForm, pageHead, select } from '../views.ts';

const SECTION = '/dashboard/activity';

export const activityScreen: Screen = {
  area: 'overview',
  nav: { label: 'Activity', href: SECTION },
  routes: async (app, { services }) => {
    app.get<{ Querystring: { product?: string } }>(SECTION, async (req, reply) => {
      const { principal } = req.dashboard;
      const products = await services.products.list(principal);
      const product = products.find((p) => p.id === req.query.product);
      const days = await services.activity.lastDays(principal, product?.id);
      const form = emptyForm({ product: product?.id ?? '' });
      return render(req, reply, {
        title: 'Activity',
        section: SECTION,
        content: html`${pageHead('Activity', 'Successful activations and validations from your apps, per day (UTC), over the last 30 days.')}
<form class="filters" method="get" action="${SECTION}">
${select({ name: 'product', label: 'Show', form, options: [{ value: '', label: 'All products' }, ...products.map((p) => ({ value: p.id, label: p.name }))] })}
<button type="submit" class="secondary">Show</button>
</form>
${activityChart(days, product ? `Activity of ${product.name}` : 'Activity of all products', { tableOpen: true })}`,
      });
    });
  },
};

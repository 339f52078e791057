import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, notFound } from '../../../core/errors.ts';
import { html } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { ConnectStripeBody, CreateMappingBody } from '../../payments/schemas.ts';
import type { PriceMapping } from '../../payments/types.ts';
import type { Product } from '../../products/service.ts';
import { fieldErrors, optional, parseWith, text, whole } from '../forms.ts';
import { POLAR_NOTICES, polarRoutes, polarSection } from './payments-polar.ts';
import { disconnectRoute } from './payment-disconnect.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen, type ScreenOptions } from '../screen.ts';
import { LEMONSQUEEZY_NOTICES, lemonSqueezyDashboardRoutes, lemonSqueezySection } from './payments-lemonsqueezy.ts';
import { actionButton, csrfInput, emptyForm, emptyState, type FormState, formError, input, pageHead, select, table, when } from '../views.ts';

const SECTION = '/dashboard/payments';
const PURCHASES = `${SECTION}/purchases`;
const PROVIDER = 'stripe';

type Services = ScreenOptions['services'];

/** The form's modes, onto the API's billing and licenseType plus one of offsetDays / fixedExpiresAt (or graceDays). */
const MODES = [
  { value: 'perpetual', label: 'Perpetual (never expires)' },
  { value: 'offset', label: 'Timed: expires a number of days after purchase' },
  { value: 'fixed', label: 'Timed: expires on a fixed date' },
  { value: 'subscription', label: 'Subscription: follows the subscription' },
];

const ruleOf = (m: PriceMapping) =>
  m.billing === 'subscription'
    ? `Subscription, ${m.graceDays} days' grace`
    : m.licenseType === 'perpetual'
      ? 'Perpetual' : m.offsetDays !== null ? `Expires ${m.offsetDays} days after purchase` : `Expires ${when(m.fixedExpiresAt)}`;

interface PageState {
  status?: number;
  connectForm?: FormState;
  mappingForm?: FormState;
  lemonSqueezyForm?: FormState;
  polarForm?: FormState;
  notice?: Notice;
}

async function paymentsPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: PageState = {}) {
  const { principal, viewer } = req.dashboard;
  const [connection, lemonSqueezy, polar, products] = await Promise.all([services.payments.connection(principal, PROVIDER), services.payments.connection(principal, 'lemonsqueezy'), services.payments.connection(principal, 'polar'), services.products.list(principal)]);
  const mappings = new Map<string, PriceMapping[]>();
  for (const p of products) mappings.set(p.id, await services.payments.listMappings(principal, p.id));

  const connectForm = o.connectForm ?? emptyForm({ restrictedKey: '' });
  const keyField = input({
    name: 'restrictedKey',
    label: 'Restricted key',
    type: 'password',
    form: { ...connectForm, values: {} }, // never sent back to the browser
    required: true,
    hint: 'rk_live_… or rk_test_… with the permissions listed in the docs (an sk_ key works too).',
    attrs: html` autocomplete="off" maxlength="255"`,
  });
  const connectPanel = html`<form class="panel" method="post" action="${SECTION}/connect" novalidate>
<h2>${connection ? 'Replace the key' : 'Connect Stripe'}</h2>
${formError(connectForm)}
${csrfInput(viewer.csrf)}
${keyField}
<div class="form-foot"><button type="submit">${connection ? 'Reconnect' : 'Connect Stripe'}</button></div>
</form>`;
  const connectionSection = connection
    ? html`<div class="grid top"><section class="card" aria-labelledby="conn-title"><h2 id="conn-title">Stripe is connected</h2>
<dl class="facts">
<div><dt>Mode</dt><dd>${connection.livemode ? 'Live' : 'Test'}</dd></div>
<div><dt>Webhook endpoint</dt><dd><code>${connection.webhookEndpointId}</code></dd></div>
<div><dt>Connected</dt><dd>${when(connection.connectedAt)}</dd></div>
</dl>
<div class="form-foot">${actionButton(viewer, `${SECTION}/disconnect`, 'Disconnect Stripe…', 'danger')}</div></section>
${connectPanel}</div>`
    : html`<div class="grid top">${emptyState('Stripe is not connected. Create a restricted key in your Stripe dashboard and paste it here: purchases then create licenses by themselves.')}${connectPanel}</div>`;

  const byId = new Map(products.map((p) => [p.id, p]));
  const mappingRows = products.flatMap((p) =>
    (mappings.get(p.id) ?? []).map(
      (m) =>
        html`<tr><td><a href="/dashboard/products/${p.id}">${p.name}</a></td><td><code>${m.priceId}</code>${m.provider === PROVIDER ? '' : ` (${m.provider})`}</td><td class="hide-phone">${ruleOf(m)}</td><td class="num hide-phone">${m.maxDevices}</td><td class="num">${actionButton(
          viewer,
          `${SECTION}/prices/remove`,
          html`Remove<span class="sr-only"> ${m.priceId}</span>…`,
          'secondary small',
          { productId: p.id, priceId: m.priceId },
        )}</td></tr>`,
    ),
  );
  const mappingList =
    mappingRows.length === 0
      ? emptyState(
          products.length === 0
            ? 'Prices map to products. Create a product first, then map its Stripe prices here.'
            : 'No prices mapped yet. Map a Stripe price to a product: each purchase of it creates a license.',
          products.length === 0 ? html`<a class="button" href="/dashboard/products/new">Create a product</a>` : undefined,
        )
      : table('Price mappings', ['Product', 'Price', { text: 'License', className: 'hide-phone' }, { text: 'Devices', className: 'num hide-phone' }, { text: 'Action', className: 'num' }], mappingRows);
  const mappingForm = o.mappingForm ?? emptyForm({ productId: products[0]?.id, mode: 'perpetual', maxDevices: '1' });
  const mappingPanel =
    products.length === 0
      ? ''
      : html`<form class="panel limit spaced" method="post" action="${SECTION}/prices" novalidate>
<h2>Map a price</h2>
${formError(mappingForm)}
${csrfInput(viewer.csrf)}
${select({ name: 'productId', label: 'Product', form: mappingForm, options: products.map((p: Product) => ({ value: p.id, label: p.name })) })}
${select({ name: 'provider', label: 'Sold through', form: mappingForm, options: [{ value: 'stripe', label: 'Stripe (a price ID)' }, { value: 'lemonsqueezy', label: 'Lemon Squeezy (a variant ID)' }, { value: 'polar', label: 'Polar (a product ID)' }] })}
${input({ name: 'priceId', label: 'Stripe price ID, Lemon Squeezy variant ID or Polar product ID', form: mappingForm, required: true, hint: 'Stripe: price_… from the product in Stripe. Lemon Squeezy: the variant ID (digits). Polar: the product’s ID.', attrs: html` maxlength="255" autocomplete="off"` })}
${input({ name: 'maxDevices', label: 'Devices per unit bought', type: 'number', form: mappingForm, required: true, attrs: html` min="1" max="100000"` })}
${select({ name: 'mode', label: 'License', form: mappingForm, options: MODES })}
${input({ name: 'offsetDays', label: 'Days until expiry (timed, days after purchase)', type: 'number', form: mappingForm, attrs: html` min="1" max="36500"` })}
${input({ name: 'fixedExpiresAt', label: 'Expiry date (timed, fixed date)', type: 'date', form: mappingForm })}
${input({ name: 'graceDays', label: 'Grace days (subscription: how long a license works after an unpaid period end)', type: 'number', form: mappingForm, hint: '0 to 60; 7 when left empty.', attrs: html` min="0" max="60"` })}
<div class="form-foot"><button type="submit">Map price</button></div>
</form>`;

  return render(req, reply, {
    status: o.status,
    title: 'Payments',
    section: SECTION,
    notice: o.notice,
    content: html`${pageHead('Payments', 'Sell through Stripe: each completed checkout of a mapped price creates a license and e-mails it to the buyer.')}
<section aria-labelledby="conn-head"><h2 id="conn-head" class="sr-only">Connection</h2>${connectionSection}</section>
${lemonSqueezySection(SECTION, viewer, lemonSqueezy, o.lemonSqueezyForm)}
${polarSection(viewer, polar, o.polarForm ?? emptyForm({ sandbox: undefined }))}
<section class="spaced" aria-labelledby="prices-title"><h2 id="prices-title">Price mappings</h2>${mappingList}${mappingPanel}</section>
<p class="spaced">Purchases, their invoices and licenses are on the <a href="${PURCHASES}">Purchases</a> page.</p>`,
  });
}

/** A form shown again: 400 for what the operator can fix, 502 when Stripe failed. */
const statusOf = (error: unknown) => (error instanceof AppError && error.statusCode >= 500 ? error.statusCode : 400);

/** A mapping form onto the API's body: the mode picks licenseType and which one of the two expiry fields is sent. */
function mappingBody(f: Record<string, string | undefined>) {
  const mode = f.mode === 'offset' || f.mode === 'fixed' || f.mode === 'subscription' ? f.mode : 'perpetual';
  return {
    ...((f.provider === 'lemonsqueezy' || f.provider === 'polar') && { provider: f.provider }),
    priceId: text(f.priceId) ?? '',
    maxDevices: whole(f.maxDevices) ?? '',
    licenseType: mode === 'perpetual' ? 'perpetual' : 'timed',
    offsetDays: mode === 'offset' ? (whole(f.offsetDays) ?? '') : undefined,
    fixedExpiresAt: mode === 'fixed' ? (optional(f.fixedExpiresAt) ?? '') : undefined,
    ...(mode === 'subscription' && { billing: 'subscription', graceDays: whole(f.graceDays) }),
  };
}

export const paymentsScreen: Screen = {
  area: 'payments',
  nav: { label: 'Payments', href: SECTION },
  notices: {
    'stripe-connected': { tone: 'ok', text: 'Stripe is connected. Map a price to a product to start selling.' },
    'stripe-disconnected': { tone: 'ok', text: 'Stripe is disconnected: its webhook endpoint is deleted and the key forgotten.' },
    'price-mapped': { tone: 'ok', text: 'Price mapped. Each purchase of it now creates a license.' },
    'price-removed': { tone: 'ok', text: 'Price mapping removed. Purchases of it no longer create licenses.' },
    ...LEMONSQUEEZY_NOTICES,
    ...POLAR_NOTICES,
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => paymentsPage(req, reply, services));
    polarRoutes(app, services, (req, reply, o) => paymentsPage(req, reply, services, o));
    lemonSqueezyDashboardRoutes(app, SECTION, services, (req, reply, o) => paymentsPage(req, reply, services, o));

    app.post(`${SECTION}/connect`, async (req, reply) => {
      const f = formOf(req);
      try {
        const { restrictedKey } = parseWith(ConnectStripeBody, { restrictedKey: text(f.restrictedKey) ?? '' });
        await services.payments.connect(req.dashboard.principal, PROVIDER, restrictedKey);
        return redirectWith(reply, SECTION, 'stripe-connected');
      } catch (error) {
        // Stripe's own words for a refused key, beside the field; Stripe unreachable above the form.
        const errors =
          error instanceof AppError && error.code === 'invalid_provider_key'
            ? { restrictedKey: error.message }
            : error instanceof AppError && error.code === 'provider_unavailable'
              ? { _form: error.message }
              : fieldErrors(error);
        if (!errors) throw error;
        return paymentsPage(req, reply, services, { status: statusOf(error), connectForm: { values: {}, errors } });
      }
    });

    disconnectRoute(app, services, { section: SECTION, path: `${SECTION}/disconnect`, provider: PROVIDER, label: 'Stripe', stops: 'purchases', notice: 'stripe-disconnected' });

    app.post(`${SECTION}/prices`, async (req, reply) => {
      const f = formOf(req);
      const productId = (f.productId ?? '').slice(0, 64);
      try {
        const { licenseType, billing, provider, ...rest } = parseWith(CreateMappingBody, mappingBody(f));
        await services.payments.addMapping(req.dashboard.principal, productId, provider ?? PROVIDER, {
          ...rest,
          billing: billing as 'one_time' | 'subscription' | undefined,
          licenseType: licenseType as 'perpetual' | 'timed',
        });
        return redirectWith(reply, SECTION, 'price-mapped');
      } catch (error) {
        const errors =
          error instanceof AppError && error.code === 'price_already_mapped'
            ? { priceId: error.message }
            : error instanceof AppError && (error.code === 'payments_not_connected' || error.code === 'provider_unavailable' || error.code === 'invalid_provider_key')
              ? { _form: error.message }
              : fieldErrors(error);
        if (!errors) throw error;
        return paymentsPage(req, reply, services, { status: statusOf(error), mappingForm: { values: f, errors } });
      }
    });

    app.post(`${SECTION}/prices/remove`, async (req, reply) => {
      const f = formOf(req);
      const productId = (f.productId ?? '').slice(0, 64);
      const priceId = (f.priceId ?? '').slice(0, 255);
      const { principal } = req.dashboard;
      const mapping = (await services.payments.listMappings(principal, productId)).find((m) => m.priceId === priceId);
      if (!mapping) throw notFound('Price mapping');
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: `Remove ${priceId}?`,
          text: 'Purchases of this price no longer create licenses. Licenses already created stay.',
          action: `${SECTION}/prices/remove`,
          button: 'Remove mapping',
          cancel: SECTION,
          fields: { productId, priceId },
        });
      }
      await services.payments.removeMapping(principal, productId, priceId);
      return redirectWith(reply, SECTION, 'price-removed');
    });
  },
};

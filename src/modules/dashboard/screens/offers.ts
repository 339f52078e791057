import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { html } from '../../../http/html.ts';
import { CreateOfferBody } from '../../offers/schemas.ts';
import type { Offer } from '../../offers/types.ts';
import { fieldErrors, optional, parseWith, text, whole } from '../forms.ts';
import { formOf, redirectWith, render, type Screen } from '../screen.ts';
import { actionButton, csrfInput, emptyForm, emptyState, type FormState, formError, input, pageHead, select, table } from '../views.ts';

type Services = Parameters<Screen['routes']>[1]['services'];

const SECTION = '/dashboard/products';
const path = (productId: string) => `${SECTION}/${encodeURIComponent(productId)}/offers`;

/** Entitlement codes as typed (spaces or commas between them); none typed: the upgrade leaves the license's alone. */
function entitlementsOf(raw: string | undefined): string[] | undefined {
  const codes = (raw ?? '').split(/[\s,]+/).filter((c) => c !== '');
  return codes.length > 0 ? codes : undefined;
}

/** The form onto the API's body: a renewal sends extendDays, an upgrade its changes. */
function offerBody(f: Record<string, string | undefined>) {
  const kind = f.kind === 'upgrade' ? 'upgrade' : 'renewal';
  return {
    kind,
    name: text(f.name) ?? '',
    priceId: text(f.priceId) ?? '',
    ...(kind === 'renewal'
      ? { extendDays: whole(f.extendDays) ?? '' }
      : { productId: optional(f.productId), maxDevices: whole(f.maxDevices), licenseType: f.licenseType === 'perpetual' ? 'perpetual' : undefined, entitlements: entitlementsOf(f.entitlements) }),
  };
}

const describe = (o: Offer, names: Map<string, string>) =>
  o.kind === 'renewal'
    ? `Renewal: +${o.extendDays} days`
    : `Upgrade: ${[o.targetProductId && `to ${names.get(o.targetProductId) ?? o.targetProductId}`, o.maxDevices && `${o.maxDevices} devices`, o.licenseType === 'perpetual' && 'perpetual', o.entitlements && `entitlements: ${o.entitlements.join(' ') || 'none'}`].filter(Boolean).join(', ')}`;

/** A product's renewals and upgrades: what its customers can buy for their licenses in the portal. */
async function offersPage(req: FastifyRequest, reply: FastifyReply, services: Services, productId: string, o: { status?: number; form?: FormState } = {}) {
  const { principal, viewer } = req.dashboard;
  const product = await services.products.get(principal, productId);
  const [offers, products] = await Promise.all([services.offers.list(principal, productId), services.products.list(principal)]);
  const names = new Map(products.map((p) => [p.id, p.name]));
  const rows = offers.map(
    (offer) =>
      html`<tr><td>${offer.name}</td><td><code>${offer.priceId}</code>${offer.provider === 'stripe' ? '' : ` (${offer.provider})`}</td><td>${describe(offer, names)}</td><td class="num">${actionButton(viewer, `${path(productId)}/remove`, html`Remove<span class="sr-only"> ${offer.name}</span>`, 'secondary small', { offerId: offer.id })}</td></tr>`,
  );
  const form = o.form ?? emptyForm({ kind: 'renewal', extendDays: '365' });
  return render(req, reply, {
    status: o.status,
    title: `Offers of ${product.name}`,
    section: SECTION,
    content: html`${pageHead('Renewals and upgrades', `What customers of ${product.name} can buy for their licenses in the portal: up to 3 of each kind.`, undefined, html`<a href="${SECTION}/${product.id}">${product.name}</a>`)}
${rows.length === 0 ? emptyState('No offers yet.') : table('Offers', ['Name', 'Price', 'What it does', { text: 'Action', className: 'num' }], rows)}
<form class="panel limit spaced" method="post" action="${path(productId)}" novalidate>
<h2>Add an offer</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${select({ name: 'kind', label: 'Kind', form, options: [{ value: 'renewal', label: 'Renewal (timed licenses)' }, { value: 'upgrade', label: 'Upgrade' }] })}
${input({ name: 'name', label: 'Name shown to the customer', form, required: true, attrs: html` maxlength="200"` })}
${select({ name: 'provider', label: 'Sold through', form, options: [{ value: 'stripe', label: 'Stripe (a price ID)' }, { value: 'polar', label: 'Polar (a product ID)' }] })}
${input({ name: 'priceId', label: 'Stripe price ID or Polar product ID', form, required: true, attrs: html` maxlength="255" autocomplete="off"` })}
${input({ name: 'extendDays', label: 'Renewal: days added', type: 'number', form, attrs: html` min="1" max="36500"` })}
${select({ name: 'productId', label: 'Upgrade: move to product', form, options: [{ value: '', label: 'Keep the product' }, ...products.filter((p) => p.id !== productId).map((p) => ({ value: p.id, label: p.name }))] })}
${input({ name: 'maxDevices', label: 'Upgrade: devices', type: 'number', form, attrs: html` min="1" max="100000"` })}
${select({ name: 'licenseType', label: 'Upgrade: license type', form, options: [{ value: '', label: 'Keep the type' }, { value: 'perpetual', label: 'Perpetual (no expiry)' }] })}
${input({ name: 'entitlements', label: 'Upgrade: entitlements', form, hint: 'The license\'s features become exactly these, e.g. "pro export.pdf": lower-case codes separated by spaces. Empty keeps the license\'s own.', attrs: html` autocomplete="off" spellcheck="false"` })}
<div class="form-foot"><button type="submit">Add offer</button></div>
</form>`,
  });
}

export const offersScreen: Screen = {
  area: 'products',
  notices: {
    'offer-added': { tone: 'ok', text: 'Offer added: customers see it in the portal beside the licenses it fits.' },
    'offer-removed': { tone: 'ok', text: 'Offer removed.' },
  },
  routes: async (app, { services }) => {
    app.get<{ Params: { id: string } }>(`${SECTION}/:id/offers`, async (req, reply) => offersPage(req, reply, services, req.params.id.slice(0, 64)));

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/offers`, async (req, reply) => {
      const productId = req.params.id.slice(0, 64);
      const f = formOf(req);
      try {
        const { kind, licenseType, ...rest } = parseWith(CreateOfferBody, offerBody(f));
        await services.offers.create(req.dashboard.principal, productId, f.provider === 'polar' ? 'polar' : 'stripe', { ...rest, kind: kind as 'renewal' | 'upgrade', licenseType: licenseType as 'perpetual' | undefined });
        return redirectWith(reply, path(productId), 'offer-added');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors || (error instanceof AppError && error.code === 'not_found')) throw error;
        return offersPage(req, reply, services, productId, { status: 400, form: { values: f, errors } });
      }
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/offers/remove`, async (req, reply) => {
      const productId = req.params.id.slice(0, 64);
      await services.offers.remove(req.dashboard.principal, productId, (formOf(req).offerId ?? '').slice(0, 64));
      return redirectWith(reply, path(productId), 'offer-removed');
    });
  },
};

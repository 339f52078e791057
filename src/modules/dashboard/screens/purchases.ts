import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import type { Purchase } from '../../payments/types.ts';
import { redirectWith, render, type Screen, type ScreenOptions } from '../screen.ts';
import { actionButton, emptyState, pageHead, table, when } from '../views.ts';

/**
 * Purchases, their invoices and the fulfilment of an unmapped one: the `purchases` area, apart from
 * the payment connection and price mappings (`payments`), so that support, who handles customers'
 * purchases (decisions.md: "purchases: read and write"), reaches them without the provider's keys.
 */
const SECTION = '/dashboard/payments/purchases';
const PAGE_SIZE = 25;

type Services = ScreenOptions['services'];

/** Which provider reported the purchase, as people write it. */
const PROVIDER_LABEL: Record<string, string> = { stripe: 'Stripe', polar: 'Polar' };
const KIND_LABEL: Record<Purchase['kind'], string> = { new: 'New', renewal: 'Renewal', upgrade: 'Upgrade', subscription: 'Subscription' };

const STATUS_BADGE: Record<Purchase['status'], { label: string; className: string }> = {
  fulfilled: { label: 'Fulfilled', className: 'active' },
  unmapped: { label: 'Unmapped', className: 'expired' },
  unmatched: { label: 'Unmatched', className: 'expired' },
  refunded: { label: 'Refunded', className: 'revoked' },
  disputed: { label: 'Disputed', className: 'revoked' },
};

/** An amount in the currency's smallest unit, shown with its currency (Intl knows each currency's decimals). */
export function formatAmount(amount: number | null, currency: string | null): string {
  if (amount === null) return '—';
  if (!currency) return String(amount);
  try {
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() });
    return format.format(amount / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
  } catch {
    return `${amount} ${currency.toUpperCase()}`;
  }
}

async function purchasesPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: { status?: number; notice?: Notice } = {}) {
  const { principal, viewer } = req.dashboard;
  const cursor = typeof (req.query as { cursor?: unknown }).cursor === 'string' ? (req.query as { cursor: string }).cursor : undefined;
  const purchases = await services.payments.listPurchases(principal, { limit: PAGE_SIZE, cursor: cursor?.slice(0, 512) });
  const purchaseRows = purchases.data.map((pu) => {
    const badge = STATUS_BADGE[pu.status];
    const keys = pu.licenseKeys.length === 0 ? html`—` : html`${pu.licenseKeys.map((k) => html`<a class="key-text" href="/dashboard/licenses/${k}">${k}</a><br>`)}`;
    const invoice = html`${pu.invoiceId ? html`<a class="button secondary small" href="${SECTION}/${pu.id}/invoice">Download invoice</a>` : html`<span class="hint">No invoice</span>`}${
      pu.status === 'unmapped' ? actionButton(viewer, `${SECTION}/${pu.id}/fulfil`, 'Fulfil', 'small') : ''
    }`;
    return html`<tr><td>${when(pu.createdAt)}</td><td>${pu.email ?? '—'}</td><td class="num">${formatAmount(pu.amountTotal, pu.currency)}</td><td class="hide-phone"><span class="badge ${badge.className}">${badge.label}</span> ${KIND_LABEL[pu.kind]}<br><span class="hint">${PROVIDER_LABEL[pu.provider] ?? pu.provider}</span></td><td class="hide-phone">${keys}</td><td class="num">${invoice}</td></tr>`;
  });
  const purchaseList: SafeHtml =
    purchaseRows.length === 0
      ? emptyState(
          cursor ? 'No more purchases.' : 'No purchases yet. They appear here as soon as a payment provider reports a completed checkout of a mapped price.',
          cursor ? html`<a class="button secondary" href="${SECTION}">Newest purchases</a>` : undefined,
        )
      : html`${table('Purchases', ['Date', 'Customer', { text: 'Amount', className: 'num' }, { text: 'Status', className: 'hide-phone' }, { text: 'Licenses', className: 'hide-phone' }, { text: 'Invoice', className: 'num' }], purchaseRows)}
<div class="pager">${cursor ? html`<a href="${SECTION}">Newest purchases</a>` : html`<span></span>`}${
          purchases.nextCursor ? html`<a class="button secondary" href="${SECTION}?cursor=${purchases.nextCursor}">Older purchases</a>` : ''
        }</div>`;
  return render(req, reply, {
    status: o.status,
    title: 'Purchases',
    section: SECTION,
    notice: o.notice,
    content: html`${pageHead('Purchases', 'Every checkout the payment providers reported, newest first, with the licenses it made and its invoice.')}
${purchaseList}`,
  });
}

export const purchasesScreen: Screen = {
  area: 'purchases',
  nav: { label: 'Purchases', href: SECTION },
  notices: {
    'purchase-fulfilled': { tone: 'ok', text: 'Purchase fulfilled: its licenses are created and the customer is e-mailed.' },
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => purchasesPage(req, reply, services));

    // Fetched from the provider at click time (its links expire), then straight to the PDF.
    app.get<{ Params: { id: string } }>(`${SECTION}/:id/invoice`, async (req, reply) => {
      try {
        const invoice = await services.payments.invoice(req.dashboard.principal, req.params.id.slice(0, 64));
        return reply.redirect(invoice.invoicePdf, 303);
      } catch (error) {
        if (!(error instanceof AppError) || error.code === 'not_found' || error.code === 'internal_error') throw error;
        return purchasesPage(req, reply, services, { status: error.statusCode, notice: { tone: 'bad', text: `The invoice could not be fetched: ${error.message}` } });
      }
    });

    // An unmapped purchase, once its prices are mapped: the same fulfilment as the webhook's.
    app.post<{ Params: { id: string } }>(`${SECTION}/:id/fulfil`, async (req, reply) => {
      try {
        await services.payments.fulfilLater(req.dashboard.principal, req.params.id.slice(0, 64));
        return redirectWith(reply, SECTION, 'purchase-fulfilled');
      } catch (error) {
        if (!(error instanceof AppError) || error.code === 'not_found' || error.code === 'internal_error') throw error;
        return purchasesPage(req, reply, services, { status: error.statusCode, notice: { tone: 'bad', text: `The purchase could not be fulfilled: ${error.message}` } });
      }
    });
  },
};

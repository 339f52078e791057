import type { FastifyReply, FastifyRequest } from 'fastify';
import { permits } from '../../../core/access.ts';
import { AppError } from '../../../core/errors.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import type { Headers } from '../../webhooks/exchange.ts';
import { RESPONSE_BODY_MAX } from '../../webhooks/exchange.ts';
import { CreateWebhookBody, UpdateWebhookBody } from '../../webhooks/schemas.ts';
import { type AttemptExchange, type DeliveryWithAttempts, WEBHOOK_EVENT_TYPES, type WebhookEndpoint } from '../../webhooks/types.ts';
import { checked, fieldErrors, nullable, parseWith, text } from '../forms.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen, type ScreenOptions } from '../screen.ts';
import { actionButton, checkbox, csrfInput, emptyForm, emptyState, fieldMessage, type FormState, formError, input, pageHead, table, when } from '../views.ts';

const SECTION = '/dashboard/webhooks';
const PAGE_SIZE = 25;
/** One checkbox per event, each with its own name (the form parser keeps one value per name). */
const ALL = 'allEvents';
const eventField = (type: string) => `event_${type}`;

type Services = ScreenOptions['services'];

const eventsLabel = (events: string[]) => (events[0] === '*' ? 'All events' : events.join(', '));
const stateBadge = (e: WebhookEndpoint) => (e.enabled ? html`<span class="badge active">Enabled</span>` : html`<span class="badge revoked">Disabled</span>`);
const DELIVERY_BADGE = { pending: 'expired', succeeded: 'active', failed: 'revoked' } as const;
const idOf = (raw: string) => raw.slice(0, 64);

async function endpointsPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: { status?: number; form?: FormState; created?: { endpoint: WebhookEndpoint; secret: string } } = {}) {
  const { principal, viewer } = req.dashboard;
  const endpoints = await services.webhooks.list(principal);
  const form = o.form ?? emptyForm({ [ALL]: 'on' });
  const created: SafeHtml | '' = o.created
    ? html`<section class="notice ok" role="status" aria-labelledby="new-secret-title"><h2 id="new-secret-title">Signing secret of ${o.created.endpoint.url}</h2>
<p>Copy it now: it is shown only this once. Check each delivery's <code>Tessera-Signature</code> header with it.</p>
<div class="secret"><code id="new-webhook-secret" aria-label="Signing secret">${o.created.secret}</code><button type="button" class="secondary small" data-copy-target="new-webhook-secret" data-copied="Signing secret copied to the clipboard." hidden>Copy secret</button></div>
<p id="copy-status" class="hint" role="status" aria-live="polite"></p></section>`
    : '';
  const list =
    endpoints.length === 0
      ? emptyState('No webhook endpoints yet. Add the URL of your server to be told at once when licenses and devices change or a purchase completes.')
      : table(
          'Webhook endpoints',
          ['URL', { text: 'Events', className: 'hide-phone' }, 'State', { text: 'Actions', className: 'num' }],
          endpoints.map(
            (e) =>
              html`<tr><td><a href="${SECTION}/${e.id}">${e.url}</a>${e.description ? html`<br><span class="hint">${e.description}</span>` : ''}</td><td class="hide-phone">${eventsLabel(e.events)}</td><td>${stateBadge(e)}</td><td class="num">${
                e.enabled ? '' : actionButton(viewer, `${SECTION}/${e.id}/enable`, 'Enable', 'secondary small')
              }${actionButton(viewer, `${SECTION}/${e.id}/delete`, html`Delete<span class="sr-only"> ${e.url}</span>…`, 'secondary small')}</td></tr>`,
          ),
        );
  return render(req, reply, {
    status: o.status,
    title: 'Webhooks',
    section: SECTION,
    content: html`${pageHead('Webhooks', 'Your servers are told of every change to licenses and devices, and of purchases, by a signed POST.')}
${created}
<div class="grid top">
<div>${list}</div>
<form class="panel" method="post" action="${SECTION}" novalidate>
<h2>Add an endpoint</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${endpointFields(form)}
<div class="form-foot"><button type="submit">Add endpoint</button></div>
</form>
</div>`,
  });
}

/** The fields an endpoint is made of, the same in the add and the edit form. */
const endpointFields = (form: FormState) => html`${input({ name: 'url', label: 'URL', type: 'url', form, required: true, hint: 'https://… on your server.', attrs: html` maxlength="2048"` })}
<fieldset><legend>Events</legend>${form.errors.events ? html`<p class="hint error-text" role="alert">${fieldMessage('Events', form.errors.events)}</p>` : ''}
${checkbox({ name: ALL, label: 'All events', form })}
${WEBHOOK_EVENT_TYPES.map((t) => checkbox({ name: eventField(t), label: t, form }))}</fieldset>
${input({ name: 'description', label: 'Description (optional)', form, attrs: html` maxlength="500"` })}`;

/** An endpoint as the edit form shows it first. */
function formOfEndpoint(e: WebhookEndpoint): FormState {
  const values: Record<string, string> = { url: e.url, description: e.description ?? '', enabled: e.enabled ? 'on' : '' };
  if (e.events[0] === '*') values[ALL] = 'on';
  else for (const t of e.events) values[eventField(t)] = 'on';
  return emptyForm(values);
}

async function editPage(req: FastifyRequest, reply: FastifyReply, endpoint: WebhookEndpoint, o: { status?: number; form?: FormState } = {}) {
  const { viewer } = req.dashboard;
  const form = o.form ?? formOfEndpoint(endpoint);
  const base = `${SECTION}/${endpoint.id}`;
  return render(req, reply, {
    status: o.status,
    title: 'Edit webhook endpoint',
    section: SECTION,
    content: html`${pageHead('Edit webhook endpoint', endpoint.url, undefined, html`<a href="${SECTION}">Webhooks</a> / <a href="${base}">${endpoint.url}</a>`)}
<form class="panel" method="post" action="${base}/edit" novalidate>
${formError(form)}
${csrfInput(viewer.csrf)}
${endpointFields(form)}
${checkbox({ name: 'enabled', label: 'Enabled', form, hint: 'A disabled endpoint is sent nothing; its missed events are listed and can be redelivered.' })}
<p class="hint">The signing secret stays the same.</p>
<div class="form-foot"><a class="button secondary" href="${base}">Cancel</a><button type="submit">Save endpoint</button></div>
</form>`,
  });
}

const attemptsOf = (d: DeliveryWithAttempts) =>
  d.log.length === 0
    ? html`<p class="hint">No attempt yet.</p>`
    : table(
        `Attempts of ${d.id}`,
        ['Time', 'HTTP status', { text: 'Duration', className: 'num' }, 'Result'],
        d.log.map(
          (a) =>
            html`<tr><td>${when(a.attemptedAt)}</td><td>${a.statusCode ?? 'No answer'}</td><td class="num">${a.durationMs} ms</td><td>${a.success ? 'Delivered' : (a.error ?? 'Failed')}</td></tr>`,
        ),
      );

async function endpointPage(req: FastifyRequest, reply: FastifyReply, services: Services, id: string, o: { status?: number; notice?: Notice } = {}) {
  const { principal, viewer } = req.dashboard;
  const cursor = (req.query as { cursor?: unknown }).cursor;
  const endpoint = await services.webhooks.get(principal, id);
  const page = await services.webhooks.deliveries(principal, id, { limit: PAGE_SIZE, cursor: typeof cursor === 'string' ? cursor.slice(0, 512) : undefined });
  const base = `${SECTION}/${endpoint.id}`;
  const rows = page.data.map(
    (d) =>
      html`<tr><td><a href="${base}/deliveries/${d.id}"><code>${d.eventType}</code><span class="sr-only"> delivery ${d.id}</span></a></td><td>${when(d.createdAt)}</td><td><span class="badge ${DELIVERY_BADGE[d.status]}">${d.status}</span></td><td class="num">${d.attempts}</td><td class="num">${
        d.lastStatusCode ?? '—'
      }</td><td class="hide-phone">${nextRetry(d)}</td><td class="num">${actionButton(viewer, `${base}/deliveries/${d.id}/redeliver`, 'Redeliver', 'secondary small')}</td></tr>
<tr class="sub"><td colspan="7"><details class="more"><summary>Attempts (${d.log.length})</summary>${attemptsOf(d)}</details></td></tr>`,
  );
  const deliveries =
    rows.length === 0
      ? emptyState(
          typeof cursor === 'string' ? 'No older deliveries.' : 'No deliveries yet. They appear here when an event this endpoint listens to happens, e.g. a license is created.',
          typeof cursor === 'string' ? html`<a class="button secondary" href="${base}">Newest deliveries</a>` : undefined,
        )
      : html`${table(
          'Deliveries',
          ['Event', 'Created', 'Status', { text: 'Attempts', className: 'num' }, { text: 'Last HTTP status', className: 'num' }, { text: 'Next retry', className: 'hide-phone' }, { text: 'Action', className: 'num' }],
          rows,
        )}
<div class="pager">${typeof cursor === 'string' ? html`<a href="${base}">Newest deliveries</a>` : html`<span></span>`}${
          page.nextCursor ? html`<a class="button secondary" href="${base}?cursor=${page.nextCursor}">Older deliveries</a>` : ''
        }</div>`;
  return render(req, reply, {
    status: o.status,
    title: `Webhook ${endpoint.url}`,
    section: SECTION,
    notice: o.notice,
    content: html`${pageHead(
      'Webhook endpoint',
      endpoint.url,
      html`${endpoint.enabled ? actionButton(viewer, `${base}/test`, 'Send test event', 'secondary') : actionButton(viewer, `${base}/enable`, 'Enable', 'secondary')}${
        permits(viewer.access, 'webhooks', 'write') ? html`<a class="button secondary" href="${base}/edit">Edit</a>` : ''
      }${actionButton(viewer, `${base}/delete`, 'Delete…', 'danger')}`,
      html`<a href="${SECTION}">Webhooks</a>`,
    )}
<dl class="facts">
<div><dt>State</dt><dd>${stateBadge(endpoint)}${endpoint.disabledAt ? html` since ${when(endpoint.disabledAt)}` : ''}</dd></div>
<div><dt>Events</dt><dd>${eventsLabel(endpoint.events)}</dd></div>
<div><dt>Description</dt><dd>${endpoint.description ?? '—'}</dd></div>
<div><dt>Created</dt><dd>${when(endpoint.createdAt)}</dd></div>
</dl>
<section class="spaced" aria-labelledby="deliveries-title"><h2 id="deliveries-title">Deliveries</h2>${deliveries}</section>`,
  });
}

/** When a pending delivery is tried next; what became of it otherwise. */
const nextRetry = (d: { status: string; nextAttemptAt: number | null }) => (d.status === 'pending' && d.nextAttemptAt !== null ? when(d.nextAttemptAt) : '—');

const headerRows = (caption: string, headers: Headers) =>
  table(
    caption,
    ['Header', 'Value'],
    Object.entries(headers).map(([name, value]) => html`<tr><td><code>${name}</code></td><td><code>${value}</code></td></tr>`),
  );

/** Pretty-printed when it is JSON (most receivers answer JSON or text), else as it came. */
function bodyText(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function attemptSection(a: AttemptExchange, n: number, deliveryId: string): SafeHtml {
  const result = a.success ? 'Delivered' : (a.error ?? 'Failed');
  const request = a.requestHeaders
    ? headerRows(`Request headers of attempt ${n}`, a.requestHeaders)
    : html`<p class="hint">Nothing was sent${a.error ? html` (${a.error})` : ''}, or the attempt predates request logging.</p>`;
  const response = a.response
    ? html`<p>HTTP ${a.statusCode}</p>${headerRows(`Response headers of attempt ${n}`, a.response.headers)}
<h4>Response body</h4>${a.response.body === '' ? html`<p class="hint">Empty.</p>` : html`<pre class="key-block" aria-label="Response body of attempt ${n}">${a.response.body}</pre>`}${
        a.response.truncated ? html`<p class="hint">Truncated: the first ${RESPONSE_BODY_MAX / 1024} KiB are shown.</p>` : ''
      }`
    : html`<p class="hint">No answer came.</p>`;
  return html`<section class="panel spaced" aria-labelledby="attempt-${n}-${deliveryId}"><h3 id="attempt-${n}-${deliveryId}">Attempt ${n}: ${when(a.attemptedAt)}, ${result}, ${a.durationMs} ms</h3>
<details class="more" open><summary>Request</summary>${request}</details>
<details class="more" open><summary>Response</summary>${response}</details></section>`;
}

async function deliveryPage(req: FastifyRequest, reply: FastifyReply, services: Services, id: string, deliveryId: string) {
  const { principal, viewer } = req.dashboard;
  const endpoint = await services.webhooks.get(principal, id);
  const d = await services.webhooks.delivery(principal, endpoint.id, deliveryId);
  const base = `${SECTION}/${endpoint.id}`;
  return render(req, reply, {
    title: `Delivery ${d.id}`,
    section: SECTION,
    content: html`${pageHead(
      `Delivery of ${d.eventType}`,
      html`To ${endpoint.url}`,
      actionButton(viewer, `${base}/deliveries/${d.id}/redeliver`, 'Redeliver', 'secondary'),
      html`<a href="${SECTION}">Webhooks</a> / <a href="${base}">${endpoint.url}</a>`,
    )}
<dl class="facts">
<div><dt>Status</dt><dd><span class="badge ${DELIVERY_BADGE[d.status]}">${d.status}</span></dd></div>
<div><dt>Event</dt><dd><code>${d.eventId}</code></dd></div>
<div><dt>Created</dt><dd>${when(d.createdAt)}</dd></div>
<div><dt>Attempts</dt><dd>${d.attempts}</dd></div>
<div><dt>Next retry</dt><dd>${nextRetry(d)}</dd></div>
<div><dt>Delivered</dt><dd>${when(d.deliveredAt, 'Not yet')}</dd></div>
</dl>
<section class="spaced" aria-labelledby="request-body-title"><h2 id="request-body-title">Request body</h2><pre class="key-block" aria-label="Request body">${bodyText(d.body)}</pre></section>
<section class="spaced" aria-labelledby="attempts-title"><h2 id="attempts-title">Attempts</h2>${
      d.log.length === 0 ? html`<p class="hint">No attempt yet.</p>` : d.log.map((a, i) => attemptSection(a, i + 1, d.id))
    }</section>`,
  });
}

/** The form onto the API's body: "All events" is `["*"]`, else the ticked events. */
function endpointBody(f: Record<string, string | undefined>) {
  const events = checked(f[ALL]) ? ['*'] : WEBHOOK_EVENT_TYPES.filter((t) => checked(f[eventField(t)]));
  return { url: text(f.url) ?? '', events, description: nullable(f.description) };
}

export const webhooksScreen: Screen = {
  area: 'webhooks',
  nav: { label: 'Webhooks', href: SECTION },
  notices: {
    'webhook-deleted': { tone: 'ok', text: 'Webhook endpoint deleted with its deliveries.' },
    'webhook-enabled': { tone: 'ok', text: 'Webhook endpoint enabled. New events are delivered to it again.' },
    'webhook-redelivered': { tone: 'ok', text: 'The event is queued for delivery again.' },
    'webhook-updated': { tone: 'ok', text: 'Webhook endpoint saved.' },
    'webhook-tested': { tone: 'ok', text: 'A test event (ping) is queued: its delivery is at the top of the list.' },
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => endpointsPage(req, reply, services));

    // The secret is in this one answer only (no redirect: it is never stored where it could be shown again).
    app.post(SECTION, async (req, reply) => {
      const f = formOf(req);
      try {
        const created = await services.webhooks.create(req.dashboard.principal, parseWith(CreateWebhookBody, endpointBody(f)));
        return endpointsPage(req, reply, services, { created });
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return endpointsPage(req, reply, services, { status: 400, form: { values: f, errors } });
      }
    });

    app.get<{ Params: { id: string } }>(`${SECTION}/:id`, async (req, reply) => endpointPage(req, reply, services, idOf(req.params.id)));

    app.get<{ Params: { id: string } }>(`${SECTION}/:id/edit`, async (req, reply) => editPage(req, reply, await services.webhooks.get(req.dashboard.principal, idOf(req.params.id))));

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/edit`, async (req, reply) => {
      const endpoint = await services.webhooks.get(req.dashboard.principal, idOf(req.params.id));
      const f = formOf(req);
      const enabled = checked(f.enabled);
      try {
        // `enabled` only when it changes: saving an enabled endpoint must not restart its failure clock.
        const body = parseWith(UpdateWebhookBody, { ...endpointBody(f), ...(enabled === endpoint.enabled ? {} : { enabled }) });
        await services.webhooks.update(req.dashboard.principal, endpoint.id, body);
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return editPage(req, reply, endpoint, { status: 400, form: { values: f, errors } });
      }
      return redirectWith(reply, `${SECTION}/${endpoint.id}`, 'webhook-updated');
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/test`, async (req, reply) => {
      const id = idOf(req.params.id);
      try {
        await services.webhooks.test(req.dashboard.principal, id);
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'invalid_request')) throw error;
        return endpointPage(req, reply, services, id, { status: 400, notice: { tone: 'bad', text: 'This endpoint is disabled. Enable it first, then send a test event.' } });
      }
      return redirectWith(reply, `${SECTION}/${id}`, 'webhook-tested');
    });

    app.get<{ Params: { id: string; deliveryId: string } }>(`${SECTION}/:id/deliveries/:deliveryId`, async (req, reply) =>
      deliveryPage(req, reply, services, idOf(req.params.id), idOf(req.params.deliveryId)),
    );

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/enable`, async (req, reply) => {
      const id = idOf(req.params.id);
      await services.webhooks.update(req.dashboard.principal, id, { enabled: true });
      return redirectWith(reply, `${SECTION}/${id}`, 'webhook-enabled');
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/delete`, async (req, reply) => {
      const endpoint = await services.webhooks.get(req.dashboard.principal, idOf(req.params.id));
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: 'Delete this webhook endpoint?',
          text: `${endpoint.url} gets no more events, and its delivery log is deleted. This cannot be undone.`,
          action: `${SECTION}/${endpoint.id}/delete`,
          button: 'Delete endpoint',
          cancel: `${SECTION}/${endpoint.id}`,
        });
      }
      await services.webhooks.delete(req.dashboard.principal, endpoint.id);
      return redirectWith(reply, SECTION, 'webhook-deleted');
    });

    app.post<{ Params: { id: string; deliveryId: string } }>(`${SECTION}/:id/deliveries/:deliveryId/redeliver`, async (req, reply) => {
      const id = idOf(req.params.id);
      try {
        await services.webhooks.redeliver(req.dashboard.principal, id, idOf(req.params.deliveryId));
      } catch (error) {
        // A disabled endpoint: said on its page, with the Enable button at hand.
        if (!(error instanceof AppError && error.code === 'invalid_request')) throw error;
        return endpointPage(req, reply, services, id, { status: 400, notice: { tone: 'bad', text: 'This endpoint is disabled. Enable it first, then redeliver.' } });
      }
      return redirectWith(reply, `${SECTION}/${id}`, 'webhook-redelivered');
    });
  },
};

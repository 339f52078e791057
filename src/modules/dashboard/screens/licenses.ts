import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isWellFormedLicenseKey, normalizeLicenseKey } from '../../../core/license-key.ts';
import { licenseStatus, type LicenseStatus } from '../../../core/license-status.ts';
import { AppError, notFound } from '../../../core/errors.ts';
import type { Principal } from '../../../core/principal.ts';
import { permits } from '../../../core/access.ts';
import { parseTimestamp } from '../../../core/time.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { CreateLicenseBody, UpdateLicenseBody } from '../../licenses/schemas.ts';
import { type LicenseSearchQuery, resolveExpiry } from '../../licenses/service.ts';
import type { LicenseRecord, LicenseSummary } from '../../licenses/types.ts';
import type { Product } from '../../products/service.ts';
import { checked, fieldErrors, mergeIssues, nullable, parseWith, whole } from '../forms.ts';
import { auditSection } from './license-audit.ts';
import { bulkAction, bulkDone, BULK_PATH, bulkForm, DONE_PATH, pageCheckbox, queryOf, rowCheckbox } from './license-bulk.ts';
import { deviceColumns, MODEL_NOTICES, modelFacts, modelForm, modelSection, rotateKey, saveModel, showsLeases } from './license-model.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen, type ScreenOptions } from '../screen.ts';
import { actionButton, checkbox, csrfInput, emptyForm, emptyState, type FormState, formError, input, pageHead, select, table, when } from '../views.ts';

const SECTION = '/dashboard/licenses';
const path = (key: string) => `${SECTION}/${encodeURIComponent(key)}`;
const STATUS_LABEL: Record<LicenseStatus, string> = { active: 'Active', expired: 'Expired', revoked: 'Revoked', fallbacked: 'Expired (fallback)' };
const STATUSES = ['active', 'expired', 'revoked'] as const;
const PAGE_SIZE = 50;

type Services = ScreenOptions['services'];
type ListQuery = { q?: string; product?: string; status?: string; sort?: string; cursor?: string; before?: string };
const SORTS = [
  { value: 'newest', label: 'Newest first' },
  { value: 'oldest', label: 'Oldest first' },
  { value: 'key', label: 'Key (A to Z)' },
] as const;

/** The list's query string, as typed (bounded): the same filters drive the page, its pager and the CSV export. */
function searchOf(q: ListQuery): LicenseSearchQuery {
  const status = STATUSES.find((s) => s === q.status);
  const sort = SORTS.find((s) => s.value === q.sort)?.value;
  return {
    query: q.q?.slice(0, 254),
    productId: q.product?.slice(0, 64) || undefined,
    status,
    sort,
    cursor: q.cursor?.slice(0, 512) || undefined,
    before: q.before?.slice(0, 512) || undefined,
  };
}

/** "1,234 licenses", or "More than 10,000 licenses" past the count's cap (LicenseService.count). */
const totalText = (t: { count: number; capped: boolean }) =>
  `${t.capped ? 'More than ' : ''}${t.count.toLocaleString('en-US')} ${t.count === 1 && !t.capped ? 'license' : 'licenses'}`;

const badge = (s: LicenseStatus) => html`<span class="badge ${s}">${STATUS_LABEL[s]}</span>`;

function statusOf(l: LicenseRecord, products: Map<string, Product>, now: number): LicenseStatus {
  return licenseStatus(l, products.get(l.productId)?.fallbackEnabled ?? false, now);
}

/** A CSV cell: quoted when needed; a leading = + - @ is defused so spreadsheets never run it as a formula. */
function csvCell(value: string | number | null): string {
  let s = value === null ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n']/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_HEADER = ['key', 'product_id', 'product_name', 'email', 'type', 'status', 'expires_at', 'max_devices', 'active_devices', 'created_at'];

function licenseForm(csrf: string, form: FormState, action: string, submit: string, products?: Product[]): SafeHtml {
  return html`<form class="panel limit" method="post" action="${action}" novalidate>
${formError(form)}
${csrfInput(csrf)}
${products ? select({ name: 'productId', label: 'Product', form, options: products.map((p) => ({ value: p.id, label: p.name })) }) : ''}
${select({ name: 'type', label: 'Type', form, options: [{ value: 'perpetual', label: 'Perpetual (never expires)' }, { value: 'timed', label: 'Timed (expires on a date)' }] })}
${input({ name: 'expiresAt', label: 'Expires on', type: 'date', form, hint: 'For timed licenses only: the license stops working at 00:00 UTC that day.' })}
${input({ name: 'maxDevices', label: 'Devices allowed', type: 'number', form, required: true, attrs: html` min="1" max="100000"` })}
${input({ name: 'email', label: "Customer's e-mail", type: 'email', form, hint: 'Optional. The customer sees the license in the portal with this address.', attrs: html` maxlength="254"` })}
${products ? checkbox({ name: 'sendEmail', label: 'Send the purchase e-mail with the key to this address', form }) : ''}
<div class="form-foot"><button type="submit">${submit}</button><a class="button secondary" href="${SECTION}">Cancel</a></div>
</form>`;
}

/** The form's fields as the API names them; the date is ignored for a perpetual license. */
function licenseBody(f: Record<string, string | undefined>) {
  return {
    type: f.type,
    expiresAt: f.type === 'perpetual' ? null : nullable(f.expiresAt),
    maxDevices: whole(f.maxDevices),
    email: nullable(f.email),
  };
}

/**
 * The form checked against the API's schema and, when that fails, against the expiry rule too: every
 * wrong field is shown at once, not one per attempt.
 */
function parseLicense<T extends typeof CreateLicenseBody | typeof UpdateLicenseBody>(schema: T, body: Record<string, unknown>) {
  try {
    return parseWith(schema, body);
  } catch (error) {
    let all = error;
    try {
      if (body.type === 'timed' || body.type === 'perpetual') resolveExpiry(body.type, body.expiresAt as string | null, null);
    } catch (rule) {
      all = mergeIssues(error, rule);
    }
    throw all;
  }
}

/**
 * What a save would do that the operator may not mean, said before it is done: an expiry date in the
 * past (the license stops working at once), fewer devices allowed than are active now (no device is
 * signed out, but no new one can activate until enough are removed).
 */
function saveWarnings(o: { expiresAt?: string | null; maxDevices?: number; now: number; activeDevices?: number; currentExpiry?: number | null }): string[] {
  const warnings: string[] = [];
  const expiry = o.expiresAt ? parseTimestamp(o.expiresAt) : null;
  if (expiry !== null && expiry <= o.now && expiry !== o.currentExpiry) {
    warnings.push(`The expiry date ${o.expiresAt!.slice(0, 10)} is in the past: the license is expired as soon as it is saved.`);
  }
  if (o.maxDevices !== undefined && o.activeDevices !== undefined && o.maxDevices < o.activeDevices) {
    warnings.push(
      `${o.activeDevices} devices are active and ${o.maxDevices} would be allowed: none is signed out, but no new device can activate until ${o.activeDevices - o.maxDevices + 1} are removed.`,
    );
  }
  return warnings;
}

/** The form's own fields, posted again from a warning's confirmation page. */
const formFields = (f: Record<string, string | undefined>) => Object.fromEntries(Object.entries(f).filter(([name]) => name !== 'csrf' && name !== 'confirm'));

/** A license page lists its devices this many at a time: a license may hold 100,000. */
const DEVICES_PER_PAGE = 100;
const pageNumber = (raw: unknown): number => {
  const n = typeof raw === 'string' && /^[0-9]{1,6}$/.test(raw) ? Number(raw) : 1;
  return n >= 1 ? n : 1;
};

/** "Devices 101 to 200 of 5,000", with the pages before and after; nothing when one page holds them all. */
function devicePager(path: string, page: number, shown: number, total: number): SafeHtml | string {
  if (page === 1 && shown >= total) return '';
  const first = (page - 1) * DEVICES_PER_PAGE + 1;
  const pages = Math.max(1, Math.ceil(total / DEVICES_PER_PAGE));
  const href = (n: number) => `${path}?devicesPage=${n}#devices-title`;
  return html`<div class="pager"><p class="hint">${shown === 0 ? `No devices on page ${page}` : `Devices ${first} to ${first + shown - 1} of ${total}`} · page ${page} of ${pages}</p>${
    page > 1 ? html`<a class="button secondary" rel="prev" href="${href(Math.min(page - 1, pages))}">Previous</a>` : ''
  }${page < pages ? html`<a class="button secondary" rel="next" href="${href(page + 1)}">Next</a>` : ''}</div>`;
}

const dateValue = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString().slice(0, 10));

async function licensePage(req: FastifyRequest, reply: FastifyReply, services: Services, key: string, o: { status?: number; form?: FormState; model?: FormState; notice?: Notice } = {}) {
  const { principal, viewer } = req.dashboard;
  const devicePage = pageNumber((req.query as { devicesPage?: unknown } | undefined)?.devicesPage);
  const { license: l, devices: shown, total } = await services.licenses.getWithDevicePage(principal, key, { offset: (devicePage - 1) * DEVICES_PER_PAGE, limit: DEVICES_PER_PAGE });
  const product = await services.products.get(principal, l.productId);
  const status = licenseStatus(l, product.fallbackEnabled, services.clock());
  const p = path(l.key);
  const subscription = (await services.subscriptions.snapshots(principal.accountId, [l.key])).get(l.key);
  const actions = html`${subscription ? actionButton(viewer, `${p}/subscription/unlink`, 'Unlink subscription…', 'secondary') : ''}${l.revoked ? actionButton(viewer, `${p}/unrevoke`, 'Un-revoke', 'secondary') : actionButton(viewer, `${p}/revoke`, 'Revoke…', 'danger')}${
    l.email ? actionButton(viewer, `${p}/send-email`, 'Resend purchase e-mail', 'secondary') : ''
  }${actionButton(viewer, `${p}/rotate-key`, 'Rotate key…', 'secondary')}${actionButton(viewer, `${p}/delete`, 'Delete…', 'danger')}`;
  const extra = deviceColumns(showsLeases(product, shown), services.clock());
  const devices =
    total === 0
      ? html`<p class="hint">No device has activated this license yet.</p>`
      : html`${table(
          'Devices',
          ['Name', 'Identifier', 'Activated', ...extra.headers, { text: 'Action', className: 'num' }],
          shown.map(
            (d) =>
              html`<tr><td>${d.name}</td><td><code>${d.identifier}</code></td><td>${when(d.activationDate)}</td>${extra.cells(d)}<td class="num">${actionButton(viewer, `${p}/devices/remove`, `Remove ${d.name}…`, 'secondary small', { device: d.identifier })}</td></tr>`,
          ),
        )}${devicePager(p, devicePage, shown.length, total)}<div class="form-foot">${actionButton(viewer, `${p}/devices/reset`, 'Reset all devices…', 'secondary')}</div>`;
  const auditCursor = (req.query as { auditCursor?: unknown } | undefined)?.auditCursor;
  const audit = await auditSection(services, principal, req.dashboard.account.email, l.key, p, typeof auditCursor === 'string' ? auditCursor.slice(0, 512) : undefined);
  const form =
    o.form ?? emptyForm({ type: l.type, expiresAt: dateValue(l.expiresAt), maxDevices: String(l.maxDevices), email: l.email ?? '' });
  return render(req, reply, {
    status: o.status,
    title: `License ${l.key}`,
    section: SECTION,
    notice: o.notice,
    content: html`${pageHead(
      'License',
      html`<span class="key-text">${l.key}</span> ${badge(status)} <button type="button" class="secondary small" data-copy="${l.key}" data-copied="License key copied to the clipboard." hidden>Copy key</button>`,
      actions,
      html`<a href="${SECTION}">Licenses</a>`,
    )}
<p id="copy-status" class="hint" role="status" aria-live="polite"></p>
<dl class="facts">
<div><dt>Product</dt><dd><a href="/dashboard/products/${product.id}">${product.name}</a></dd></div>
<div><dt>Customer</dt><dd>${l.email ?? 'No e-mail'}</dd></div>
<div><dt>Expires</dt><dd>${when(l.expiresAt)}</dd></div>
<div><dt>Devices</dt><dd>${total} of ${l.maxDevices}</dd></div>
<div><dt>Created</dt><dd>${when(l.createdAt)}</dd></div>
${modelFacts(l, product)}
${
  subscription &&
  html`<div><dt>Subscription</dt><dd><code>${subscription.id}</code> (${subscription.provider}) · ${subscription.status}${subscription.cancelAtPeriodEnd ? ' · cancels at period end' : ''} · period ends ${when(subscription.currentPeriodEnd)}</dd></div>`
}
</dl>
<section class="card spaced" aria-labelledby="devices-title"><h2 id="devices-title">Devices</h2>${devices}</section>
<section aria-labelledby="edit-title"><h2 id="edit-title">Edit</h2>${licenseForm(viewer.csrf, form, p, 'Save changes')}</section>
${modelSection(viewer.csrf, `${p}/model`, modelForm(l, o.model))}
${audit}`,
  });
}

/** The list: search, filters, a page of licenses with their checkboxes, the bulk bar and the pager. */
async function listPage(req: FastifyRequest, reply: FastifyReply, services: Services, query: ListQuery, o: { status?: number; notice?: Notice; bulk?: FormState } = {}) {
      const { principal } = req.dashboard;
      const products = await services.products.list(principal);
      const byId = new Map(products.map((p) => [p.id, p]));
      const search = searchOf(query);
      const [page, total] = await Promise.all([services.licenses.search(principal, { ...search, limit: PAGE_SIZE }), services.licenses.count(principal, search)]);
      const now = services.clock();
      const filters = { q: query.q, product: search.productId, status: search.status, sort: search.sort };
      const form = emptyForm(filters);
      const filtered = Boolean(search.query || search.productId || search.status);
      const head = pageHead(
        'Licenses',
        'Find a license by a piece of its key, the customer\'s e-mail address (a domain like @acme.com works) or a device\'s identifier or name.',
        html`<a class="button" href="${SECTION}/new${search.productId ? `?product=${search.productId}` : ''}">New license</a><a class="button secondary" href="${SECTION}/export.csv${queryOf(filters)}">Export CSV</a>`,
      );
      const filterForm = html`<form class="filters" method="get" action="${SECTION}" role="search">
${input({ name: 'q', label: 'Key, e-mail or device', type: 'search', form, wide: true, attrs: html` maxlength="254"`, hint: 'Three characters or more find any part; one or two, the start of a key.' })}
${select({ name: 'product', label: 'Product', form, options: [{ value: '', label: 'All products' }, ...products.map((p) => ({ value: p.id, label: p.name }))] })}
${select({ name: 'status', label: 'Status', form, options: [{ value: '', label: 'Any status' }, ...STATUSES.map((s) => ({ value: s, label: STATUS_LABEL[s] }))] })}
${select({ name: 'sort', label: 'Order', form, options: [...SORTS] })}
<button type="submit">Search</button>${filtered ? html`<a href="${SECTION}">Clear</a>` : ''}
</form>`;
      let body: SafeHtml;
      if (page.data.length === 0) {
        body =
          products.length === 0
            ? emptyState('Licenses belong to a product. Create your first product, then issue its licenses here.', html`<a class="button" href="/dashboard/products/new">Create a product</a>`)
            : filtered || search.cursor || search.before
              ? emptyState('No license matches. Check the key or address, or clear the filters.', html`<a class="button secondary" href="${SECTION}">Show all licenses</a>`)
              : emptyState('No licenses yet. Create one by hand, or let your store create them through the API.', html`<a class="button" href="${SECTION}/new">Create a license</a>`);
      } else {
        // The checkboxes and the bulk bar only for who may change licenses (the server checks again).
        const bulk = permits(req.dashboard.viewer.access, 'licenses', 'write');
        body = html`${table(
          'Licenses',
          [...(bulk ? [{ text: pageCheckbox, className: 'select' }] : []), 'Key', 'Customer', { text: 'Product', className: 'hide-phone' }, 'Status', { text: 'Devices', className: 'num' }, { text: 'Expires', className: 'hide-phone' }, { text: 'Created', className: 'hide-phone' }],
          page.data.map(
            (l) =>
              html`<tr>${bulk ? html`<td class="select">${rowCheckbox(l.key)}</td>` : ''}<td><a class="key-text" href="${path(l.key)}">${l.key}</a></td><td>${l.email ?? '—'}</td><td class="hide-phone">${byId.get(l.productId)?.name ?? l.productId}</td><td>${badge(
                statusOf(l, byId, now),
              )}</td><td class="num">${l.activeDeviceCount} / ${l.maxDevices}</td><td class="hide-phone">${when(l.expiresAt)}</td><td class="hide-phone">${when(l.createdAt)}</td></tr>`,
          ),
        )}
<div class="pager"><p class="hint" id="license-count">${totalText(total)}</p>${
          search.cursor || search.before ? html`<a href="${SECTION}${queryOf(filters)}">First page</a>` : ''
        }${page.prevCursor ? html`<a class="button secondary" rel="prev" href="${SECTION}${queryOf({ ...filters, before: page.prevCursor })}">Previous page</a>` : ''}${
          page.nextCursor ? html`<a class="button secondary" rel="next" href="${SECTION}${queryOf({ ...filters, cursor: page.nextCursor })}">Next page</a>` : ''
        }</div>
${bulk ? bulkForm({ csrf: req.dashboard.viewer.csrf, pageKeys: page.data.map((l) => l.key), filters, total: totalText(total), form: o.bulk ?? emptyForm({ scope: 'selected' }) }) : ''}`;
      }
      return render(req, reply, { status: o.status, notice: o.notice, title: 'Licenses', section: SECTION, content: html`${head}${filterForm}${body}` });
}

/** Licenses as CSV rows, streamed a batch at a time (memory stays flat whatever the count). */
async function sendCsv(req: FastifyRequest, reply: FastifyReply, services: Services, batches: AsyncIterable<LicenseSummary[]>) {
  const products = await services.products.list(req.dashboard.principal);
  const byId = new Map(products.map((p) => [p.id, p]));
  const now = services.clock();
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  async function* rows() {
    yield `${CSV_HEADER.join(',')}\r\n`;
    for await (const batch of batches) {
      let chunk = '';
      for (const l of batch) {
        chunk += `${[l.key, l.productId, byId.get(l.productId)?.name ?? '', l.email, l.type, statusOf(l, byId, now), iso(l.expiresAt), l.maxDevices, l.activeDeviceCount, iso(l.createdAt)].map(csvCell).join(',')}\r\n`;
      }
      yield chunk;
    }
  }
  const stamp = new Date(now).toISOString().slice(0, 10);
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="licenses-${stamp}.csv"`)
    .send(Readable.from(rows()));
}

/** The selected licenses of the caller's account, one at a time; another account's or an unknown key is left out. */
async function* selected(services: Services, principal: Principal, keys: readonly string[]): AsyncGenerator<LicenseSummary[]> {
  for (const key of keys) {
    const found = await services.licenses.getWithDevicePage(principal, key, { offset: 0, limit: 0 }).catch((error: unknown) => {
      if (error instanceof AppError && error.code === 'not_found') return undefined;
      throw error;
    });
    if (found) yield [{ ...found.license, activeDeviceCount: found.total }];
  }
}

export const licensesScreen: Screen = {
  area: 'licenses',
  nav: { label: 'Licenses', href: SECTION },
  notices: {
    'license-created': { tone: 'ok', text: 'License created.' },
    'license-created-mailed': { tone: 'ok', text: 'License created. The purchase e-mail is on its way.' },
    'license-saved': { tone: 'ok', text: 'Changes saved.' },
    'license-revoked': { tone: 'ok', text: 'License revoked. Apps using it stop working at their next validation.' },
    'license-unrevoked': { tone: 'ok', text: 'License restored.' },
    'license-deleted': { tone: 'ok', text: 'License deleted.' },
    'device-removed': { tone: 'ok', text: 'Device removed. Its slot is free again.' },
    'devices-reset': { tone: 'ok', text: 'All devices removed.' },
    'subscription-unlinked': { tone: 'ok', text: 'Unlinked: the subscription no longer changes this license.' },
    'email-sent': { tone: 'ok', text: 'The purchase e-mail is on its way.' },
    ...MODEL_NOTICES,
  },
  routes: async (app, { services }) => {
    app.get<{ Querystring: ListQuery }>(SECTION, async (req, reply) => listPage(req, reply, services, req.query));

    app.get<{ Querystring: ListQuery }>(`${SECTION}/export.csv`, async (req, reply) => {
      const { cursor: _ignored, before: _also, ...search } = searchOf(req.query);
      return sendCsv(req, reply, services, services.licenses.exportAll(req.dashboard.principal, search));
    });

    // A bulk action on the ticked rows or the whole filtered list (license-bulk.ts); export answers the CSV of the selection.
    app.post(BULK_PATH, async (req, reply) =>
      bulkAction(req, reply, services, {
        listPage: (rq, rp, query, o) => listPage(rq, rp, services, query, o),
        search: searchOf,
        exportCsv: (rq, rp, keys) => sendCsv(rq, rp, services, selected(services, rq.dashboard.principal, keys)),
      }),
    );

    app.get<{ Querystring: Record<string, string | undefined> }>(DONE_PATH, bulkDone);

    const newPage = async (req: FastifyRequest, reply: FastifyReply, form: FormState, status = 200) => {
      const products = await services.products.list(req.dashboard.principal);
      const content =
        products.length === 0
          ? html`${pageHead('New license')}${emptyState('Licenses belong to a product. Create a product first.', html`<a class="button" href="/dashboard/products/new">Create a product</a>`)}`
          : html`${pageHead('New license', 'A new key is generated for you.', undefined, html`<a href="${SECTION}">Licenses</a>`)}${licenseForm(req.dashboard.viewer.csrf, form, `${SECTION}/new`, 'Create license', products)}`;
      return render(req, reply, { status, title: 'New license', section: SECTION, content });
    };

    app.get<{ Querystring: { product?: string } }>(`${SECTION}/new`, async (req, reply) =>
      newPage(req, reply, emptyForm({ productId: req.query.product, type: 'perpetual', maxDevices: '1' })),
    );

    app.post(`${SECTION}/new`, async (req, reply) => {
      const f = formOf(req);
      try {
        const body = parseLicense(CreateLicenseBody, { productId: f.productId ?? '', ...licenseBody(f), sendEmail: checked(f.sendEmail) });
        const warnings = saveWarnings({ expiresAt: body.expiresAt, now: services.clock() });
        if (warnings.length > 0 && !confirmed(req)) {
          return askFirst(req, reply, { section: SECTION, title: 'Create this license anyway?', text: warnings.join(' '), action: `${SECTION}/new`, button: 'Create anyway', cancel: `${SECTION}/new`, fields: formFields(f) });
        }
        const license = await services.licenses.create(req.dashboard.principal, body);
        return redirectWith(reply, path(license.key), body.sendEmail ? 'license-created-mailed' : 'license-created');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return newPage(req, reply, { values: f, errors }, 400);
      }
    });

    /** A key in a path: well-formed or not found (nothing else reaches a service). */
    const keyOf = (raw: string) => {
      const key = normalizeLicenseKey(raw);
      if (!isWellFormedLicenseKey(key)) throw notFound('License');
      return key;
    };

    app.get<{ Params: { key: string } }>(`${SECTION}/:key`, async (req, reply) => licensePage(req, reply, services, keyOf(req.params.key)));

    app.post<{ Params: { key: string } }>(`${SECTION}/:key`, async (req, reply) => {
      const key = keyOf(req.params.key);
      const f = formOf(req);
      try {
        const body = parseLicense(UpdateLicenseBody, licenseBody(f));
        const current = await services.licenses.getWithDevicePage(req.dashboard.principal, key, { offset: 0, limit: 0 });
        const warnings = saveWarnings({ expiresAt: body.expiresAt, maxDevices: body.maxDevices, now: services.clock(), activeDevices: current.total, currentExpiry: current.license.expiresAt });
        if (warnings.length > 0 && !confirmed(req)) {
          return askFirst(req, reply, { section: SECTION, title: 'Save these changes anyway?', text: warnings.join(' '), action: path(key), button: 'Save anyway', cancel: path(key), fields: formFields(f) });
        }
        await services.licenses.update(req.dashboard.principal, key, body);
        return redirectWith(reply, path(key), 'license-saved');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return licensePage(req, reply, services, key, { status: 400, form: { values: f, errors } });
      }
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/revoke`, async (req, reply) => {
      const key = keyOf(req.params.key);
      await services.licenses.get(req.dashboard.principal, key);
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: 'Revoke this license?',
          text: `Apps using ${key} stop working at their next validation. You can un-revoke it later.`,
          action: `${path(key)}/revoke`,
          button: 'Revoke license',
          cancel: path(key),
        });
      }
      await services.licenses.update(req.dashboard.principal, key, { revoked: true });
      return redirectWith(reply, path(key), 'license-revoked');
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/unrevoke`, async (req, reply) => {
      const key = keyOf(req.params.key);
      await services.licenses.update(req.dashboard.principal, key, { revoked: false });
      return redirectWith(reply, path(key), 'license-unrevoked');
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/send-email`, async (req, reply) => {
      const key = keyOf(req.params.key);
      try {
        await services.licenses.sendPurchaseEmail(req.dashboard.principal, key);
      } catch (error) {
        if (!fieldErrors(error)) throw error;
        return licensePage(req, reply, services, key, { status: 400, notice: { tone: 'bad', text: 'This license has no e-mail address. Add one first.' } });
      }
      return redirectWith(reply, path(key), 'email-sent');
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/model`, async (req, reply) => saveModel(req, reply, services, keyOf(req.params.key), licensePage));
    app.post<{ Params: { key: string } }>(`${SECTION}/:key/rotate-key`, async (req, reply) => rotateKey(req, reply, services, keyOf(req.params.key), licensePage));

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/devices/remove`, async (req, reply) => {
      const key = keyOf(req.params.key);
      const device = (formOf(req).device ?? '').slice(0, 256);
      const license = await services.licenses.get(req.dashboard.principal, key);
      const found = license.activeDevices.find((d) => d.identifier === device);
      if (!found) return redirectWith(reply, path(key), 'device-removed');
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: `Remove ${found.name}?`,
          text: `The device ${found.name} (${found.identifier}) is signed out of this license and its slot is freed.`,
          action: `${path(key)}/devices/remove`,
          button: 'Remove device',
          cancel: path(key),
          fields: { device },
        });
      }
      await services.licenses.removeDevice(req.dashboard.principal, key, device);
      return redirectWith(reply, path(key), 'device-removed');
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/devices/reset`, async (req, reply) => {
      const key = keyOf(req.params.key);
      await services.licenses.get(req.dashboard.principal, key);
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: 'Remove all devices?',
          text: 'Every device is signed out of this license; the customer can activate it again anywhere.',
          action: `${path(key)}/devices/reset`,
          button: 'Remove all devices',
          cancel: path(key),
        });
      }
      await services.licenses.resetDevices(req.dashboard.principal, key);
      return redirectWith(reply, path(key), 'devices-reset');
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/subscription/unlink`, async (req, reply) => {
      const key = keyOf(req.params.key);
      await services.licenses.get(req.dashboard.principal, key);
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: 'Unlink the subscription?',
          text: 'Later payments, plan changes and cancellations of the subscription no longer change this license: its expiry, product and devices stay as they are now.',
          action: `${path(key)}/subscription/unlink`,
          button: 'Unlink subscription',
          cancel: path(key),
        });
      }
      await services.subscriptions.unlink(req.dashboard.principal, key);
      return redirectWith(reply, path(key), 'subscription-unlinked');
    });

    app.post<{ Params: { key: string } }>(`${SECTION}/:key/delete`, async (req, reply) => {
      const key = keyOf(req.params.key);
      await services.licenses.get(req.dashboard.principal, key);
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: 'Delete this license?',
          text: `${key} and its devices are deleted; apps using it stop working. This cannot be undone.`,
          action: `${path(key)}/delete`,
          button: 'Delete license',
          cancel: path(key),
        });
      }
      await services.licenses.delete(req.dashboard.principal, key);
      return redirectWith(reply, SECTION, 'license-deleted');
    });
  },
};

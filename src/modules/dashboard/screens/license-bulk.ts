import type { FastifyReply, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { applyBulk, BULK_ACTIONS, BULK_MAX, type BulkAction, type BulkOutcome, EXTEND_DAYS_MAX, type SkipReason } from '../../licenses/bulk.ts';
import type { LicenseSearchQuery } from '../../licenses/service.ts';
import { askFirst, confirmed, formOf, render, type ScreenOptions } from '../screen.ts';
import { csrfInput, type FormState, input, select } from '../views.ts';

/**
 * The license list's bulk actions (docs/dashboard.md, "Bulk actions"): a plain form posts the
 * ticked rows (`k:<key>` checkboxes, which the urlencoded parser keeps apart) or the whole filtered
 * list; a confirmation page says how many and what happens; each license then goes through its
 * single action (licenses/bulk.ts). Export changes nothing and answers the CSV at once.
 */

type Services = ScreenOptions['services'];
type Choice = BulkAction | 'export';
const SECTION = '/dashboard/licenses';
export const BULK_PATH = `${SECTION}/bulk`;
/** The list's filter fields, carried by the bulk form for "all matching". */
const FILTER_FIELDS = ['q', 'product', 'status', 'sort'] as const;

const ACTION_LABEL: Record<Choice, string> = {
  revoke: 'Revoke',
  unrevoke: 'Un-revoke',
  extend: 'Extend expiry by N days',
  email: 'E-mail the key (purchase e-mail)',
  delete: 'Delete',
  export: 'Export CSV',
};

const SKIP_TEXT: Record<SkipReason, string> = {
  not_found: 'not found',
  already_revoked: 'already revoked',
  not_revoked: 'not revoked',
  perpetual: 'perpetual (no expiry to extend)',
  no_email: 'no e-mail address',
};

const DONE_TEXT: Record<BulkAction, string> = { revoke: 'Revoked', unrevoke: 'Un-revoked', extend: 'Extended', email: 'E-mailed the key of', delete: 'Deleted' };

export const licensesText = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'license' : 'licenses'}`;

/** The bulk bar under the list: the rows' checkboxes name this form (`form="bulk"`). */
export function bulkForm(o: { csrf: string; pageKeys: string[]; filters: Record<string, string | undefined>; total: string; form: FormState }): SafeHtml {
  return html`<form id="bulk" class="panel spaced" method="post" action="${BULK_PATH}" novalidate aria-labelledby="bulk-title">
<h2 id="bulk-title">Bulk action</h2>
${csrfInput(o.csrf)}
<input type="hidden" name="pageKeys" value="${o.pageKeys.join(' ')}">
${FILTER_FIELDS.map((name) => (o.filters[name] ? html`<input type="hidden" name="${name}" value="${o.filters[name]}">` : ''))}
<div class="row">
${select({ name: 'scope', label: 'Apply to', form: o.form, options: [{ value: 'selected', label: 'The selected licenses' }, { value: 'all', label: `All ${o.total} matching this search` }], hint: `At most ${BULK_MAX.toLocaleString('en-US')} licenses at a time.` })}
${select({ name: 'action', label: 'Action', form: o.form, options: [{ value: '', label: 'Choose an action' }, ...(['revoke', 'unrevoke', 'extend', 'email', 'delete', 'export'] as const).map((a) => ({ value: a, label: ACTION_LABEL[a] }))] })}
${input({ name: 'days', label: 'Days (for extend)', type: 'number', form: o.form, attrs: html` min="1" max="${String(EXTEND_DAYS_MAX)}"`, hint: 'From each license\'s current expiry; perpetual ones are skipped.' })}
</div>
<div class="form-foot"><button type="submit">Apply…</button></div>
</form>`;
}

/** The row's checkbox (and the header's "all on this page"), outside the form but posted with it. */
export const rowCheckbox = (key: string) =>
  html`<input id="select-${key}" type="checkbox" form="bulk" name="k:${key}" value="on"><label class="sr-only" for="select-${key}">Select ${key}</label>`;
export const pageCheckbox = html`<input id="select-page" type="checkbox" form="bulk" name="pageAll" value="on"><label class="sr-only" for="select-page">Select all on this page</label>`;

type Parsed = { choice: Choice; days: number; scope: 'selected' | 'all'; keys: string[]; filters: Record<string, string | undefined> };

/** The posted form checked: every wrong field at once, or what to do to which keys. */
async function parse(services: Services, req: FastifyRequest, search: (f: Record<string, string | undefined>) => LicenseSearchQuery): Promise<Parsed | { errors: Record<string, string> }> {
  const f = formOf(req);
  const errors: Record<string, string> = {};
  const choice = [...BULK_ACTIONS, 'export' as const].find((a) => a === f.action);
  if (!choice) errors.action = 'Choose an action.';
  const days = /^[0-9]{1,4}$/.test(f.days ?? '') ? Number(f.days) : NaN;
  if (choice === 'extend' && !(days >= 1 && days <= EXTEND_DAYS_MAX)) errors.days = `Days must be a whole number from 1 to ${EXTEND_DAYS_MAX}.`;
  const scope = f.scope === 'all' ? 'all' : 'selected';
  const filters = Object.fromEntries(FILTER_FIELDS.map((name) => [name, f[name]?.slice(0, 512) || undefined]));
  let keys: string[] = [];
  if (scope === 'all') {
    const { cursor: _c, before: _b, ...query } = search(filters);
    for await (const batch of services.licenses.exportAll(req.dashboard.principal, query)) {
      keys.push(...batch.map((l) => l.key));
      if (keys.length > BULK_MAX) break;
    }
  } else {
    const ticked = Object.keys(f).filter((name) => name.startsWith('k:')).map((name) => name.slice(2));
    const page = f.pageAll === 'on' ? (f.pageKeys ?? '').split(' ') : [];
    const carried = (f.keys ?? '').split(' '); // from the confirmation page
    keys = [...new Set([...ticked, ...page, ...carried].map((k) => k.slice(0, 64)).filter(Boolean))];
  }
  if (keys.length === 0) errors.scope = scope === 'all' ? 'No license matches this search.' : 'Select at least one license, or choose all licenses matching the search.';
  if (keys.length > BULK_MAX) errors.scope = `That is more than ${BULK_MAX.toLocaleString('en-US')} licenses: narrow the search (product, status) and apply the action to each part.`;
  if (Object.keys(errors).length > 0 || !choice) return { errors };
  return { choice, days, scope, keys, filters };
}

function question(p: Parsed & { choice: BulkAction }): { title: string; text: string; button: string } {
  const n = licensesText(p.keys.length);
  const them = p.keys.length === 1 ? 'it' : 'them';
  const which = p.scope === 'all' ? ' (every license matching the search when you confirm)' : '';
  switch (p.choice) {
    case 'revoke':
      return { title: `Revoke ${n}?`, text: `${n}${which} will be revoked: apps using ${them} stop working at their next validation. Licenses already revoked are skipped. You can un-revoke later.`, button: `Revoke ${n}` };
    case 'unrevoke':
      return { title: `Un-revoke ${n}?`, text: `${n}${which} will work again. Licenses that are not revoked are skipped.`, button: `Un-revoke ${n}` };
    case 'extend':
      return { title: `Extend ${n} by ${p.days} days?`, text: `The expiry of ${n}${which} moves ${p.days} days later, from each one's current expiry. Perpetual licenses have no expiry and are skipped.`, button: `Extend ${n}` };
    case 'email':
      return { title: `E-mail the key of ${n}?`, text: `The purchase e-mail with the key is sent again to the customer of ${n}${which}. Licenses without an e-mail address are skipped.`, button: `Send ${p.keys.length === 1 ? '1 e-mail' : `${p.keys.length} e-mails`}` };
    case 'delete':
      return { title: `Delete ${n}?`, text: `This deletes ${n}${which} and ${p.keys.length === 1 ? 'its' : 'their'} devices; apps using ${them} stop working. This cannot be undone.`, button: `Delete ${n}` };
  }
}

/** "Revoked 3 licenses. Skipped 1: already revoked. 1 failed." */
export function outcomeText(choice: BulkAction, o: BulkOutcome): string {
  const skipped = Object.entries(o.skipped) as [SkipReason, number][];
  const total = skipped.reduce((sum, [, n]) => sum + n, 0);
  return [
    `${DONE_TEXT[choice]} ${licensesText(o.changed)}.`,
    total > 0 ? `Skipped ${total}: ${skipped.map(([reason, n]) => `${n} ${SKIP_TEXT[reason]}`).join(', ')}.` : '',
    o.failed > 0 ? `${o.failed} failed (unchanged).` : '',
  ].filter(Boolean).join(' ');
}

export type ListPage = (req: FastifyRequest, reply: FastifyReply, query: Record<string, string | undefined>, o: { status?: number; notice?: Notice; bulk?: FormState }) => Promise<FastifyReply>;

/** POST /dashboard/licenses/bulk: a form error on the list, the confirmation, or the change and its outcome. */
export async function bulkAction(
  req: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  o: { listPage: ListPage; search: (f: Record<string, string | undefined>) => LicenseSearchQuery; exportCsv: (req: FastifyRequest, reply: FastifyReply, keys: string[]) => Promise<FastifyReply> },
): Promise<FastifyReply> {
  const f = formOf(req);
  const parsed = await parse(services, req, o.search);
  const back = Object.fromEntries(FILTER_FIELDS.map((name) => [name, f[name]]));
  if ('errors' in parsed) {
    return o.listPage(req, reply, back, { status: 400, notice: { tone: 'bad', text: Object.values(parsed.errors).join(' ') }, bulk: { values: f, errors: parsed.errors } });
  }
  if (parsed.choice === 'export') return o.exportCsv(req, reply, parsed.keys);
  const p = { ...parsed, choice: parsed.choice };
  const listUrl = `${SECTION}${queryOf(parsed.filters)}`;
  if (!confirmed(req)) {
    const q = question(p);
    const fields = { action: p.choice, days: p.choice === 'extend' ? String(p.days) : undefined, scope: p.scope, keys: p.scope === 'selected' ? p.keys.join(' ') : undefined, ...parsed.filters };
    return askFirst(req, reply, { section: SECTION, ...q, action: BULK_PATH, cancel: listUrl, fields });
  }
  const outcome = await applyBulk(services.licenses, req.dashboard.principal, p.choice, p.keys, p.days);
  // Post/redirect/get: reloading the outcome page must not apply the action again (an extend or an e-mail would repeat).
  return reply.redirect(`${DONE_PATH}${queryOf({ ...parsed.filters, ...outcomeQuery(p.choice, outcome) })}`, 303);
}

export const DONE_PATH = `${BULK_PATH}/done`;

/** The outcome as the result page's query: numbers and fixed names only, never text. */
function outcomeQuery(choice: BulkAction, o: BulkOutcome): Record<string, string> {
  const skipped = Object.entries(o.skipped).map(([reason, n]) => `${reason}:${n}`).join(',');
  return { done: choice, changed: String(o.changed), failed: String(o.failed), ...(skipped ? { skipped } : {}) };
}

const count = (v: string | undefined) => (/^[0-9]{1,4}$/.test(v ?? '') ? Number(v) : 0);

/** Reads what outcomeQuery wrote; anything else in the URL is ignored (the page shows only counts). */
function outcomeOf(q: Record<string, string | undefined>): { choice: BulkAction; outcome: BulkOutcome } | undefined {
  const choice = BULK_ACTIONS.find((a) => a === q.done);
  if (!choice) return undefined;
  const skipped: BulkOutcome['skipped'] = {};
  for (const part of (q.skipped ?? '').split(',')) {
    const [reason, n] = part.split(':');
    if (reason && Object.hasOwn(SKIP_TEXT, reason) && count(n) > 0) skipped[reason as SkipReason] = count(n);
  }
  return { choice, outcome: { changed: count(q.changed), failed: count(q.failed), skipped } };
}

/** GET /dashboard/licenses/bulk/done: what the bulk action did, and the way back to the same search. */
export async function bulkDone(req: FastifyRequest<{ Querystring: Record<string, string | undefined> }>, reply: FastifyReply): Promise<FastifyReply> {
  const filters = Object.fromEntries(FILTER_FIELDS.map((name) => [name, req.query[name]?.slice(0, 512)]));
  const listUrl = `${SECTION}${queryOf(filters)}`;
  const result = outcomeOf(req.query);
  if (!result) return reply.redirect(listUrl, 303);
  const text = outcomeText(result.choice, result.outcome);
  return render(req, reply, {
    title: 'Bulk action done',
    section: SECTION,
    notice: { tone: result.outcome.failed > 0 ? 'warn' : 'ok', text },
    content: html`<h1>Bulk action done</h1><p class="lead" id="bulk-outcome">${text}</p><p><a class="button" href="${listUrl}">Back to the licenses</a></p>`,
  });
}

export const queryOf = (q: Record<string, string | undefined>) => {
  const s = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => Boolean(e[1]))).toString();
  return s ? `?${s}` : '';
};

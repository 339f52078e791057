import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type Issue } from '../../../core/errors.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { sendPage } from '../../../http/web/pages.ts';
import { applyMetadata, type Metadata, METADATA_KEY_MAX, METADATA_KEYS_MAX, METADATA_VALUE_MAX, type MetadataChange } from '../../licenses/metadata.ts';
import { UpdateLicenseBody } from '../../licenses/schemas.ts';
import type { Device, LicenseRecord } from '../../licenses/types.ts';
import type { Product } from '../../products/service.ts';
import { checked, fieldErrors, parseWith } from '../forms.ts';
import { codesOf, codesProblem, withIssues } from '../model-fields.ts';
import { askFirst, confirmed, formOf, redirectWith, type ScreenOptions } from '../screen.ts';
import { csrfInput, emptyForm, type FormState, fieldMessage, formError, input, page, pageHead, textarea, when } from '../views.ts';

/**
 * The license page's parts of the licensing model (decisions.md, "Licensing model"): the
 * entitlements and metadata editor, the devices' last sighting and lease, and key rotation. The
 * routes are the license screen's (screens/licenses.ts); their work is here.
 */

type Services = ScreenOptions['services'];
type FormBody = Record<string, string | undefined>;
/** Re-renders the license page with the editor's submitted values and errors (400). */
export type LicensePageWith = (req: FastifyRequest, reply: FastifyReply, services: Services, key: string, o: { status?: number; model?: FormState; notice?: Notice }) => Promise<FastifyReply>;

/** Empty rows under the entries, for new keys (more after a save). */
const BLANK_ROWS = 3;
/** Rows read from a post: every key the limit allows, plus the blank ones. */
const ROWS_MAX = METADATA_KEYS_MAX + BLANK_ROWS;

// ---- Devices -------------------------------------------------------------------------------------

/** Whether the devices table shows leases: on a floating product, or while a device still holds one. */
export const showsLeases = (product: Product, devices: Device[]) => product.floating.enabled || devices.some((d) => d.leaseExpiresAt != null);

/** The devices table's extra headers and cells: last seen, and the lease's end where leases apply. */
export function deviceColumns(leases: boolean, now: number) {
  return {
    headers: leases ? ['Last seen', 'Lease ends'] : ['Last seen'],
    cells: (d: Device) =>
      html`<td>${when(d.lastSeenAt ?? null, 'Unknown')}</td>${
        leases ? html`<td>${d.leaseExpiresAt == null ? 'No lease' : d.leaseExpiresAt <= now ? `Lapsed ${when(d.leaseExpiresAt)}` : when(d.leaseExpiresAt)}</td>` : ''
      }`,
  };
}

// ---- Facts ---------------------------------------------------------------------------------------

/** The license page's facts about its model: entitlements, trial, floating seats. */
export function modelFacts(l: LicenseRecord, product: Product): SafeHtml {
  const minutes = Math.round(product.floating.leaseSeconds / 60);
  return html`<div><dt>Entitlements</dt><dd>${l.entitlements.length === 0 ? 'None' : html`${l.entitlements.map((c, i) => html`${i > 0 ? ' ' : ''}<code>${c}</code>`)}`}</dd></div>
${l.trial ? html`<div><dt>Trial</dt><dd>Started as a trial from the app</dd></div>` : ''}
${product.floating.enabled ? html`<div><dt>Seats</dt><dd>Floating, ${minutes >= 1 ? `${minutes} min` : `${product.floating.leaseSeconds} s`} lease</dd></div>` : ''}`;
}

// ---- Entitlements and metadata editor ------------------------------------------------------------

/** The editor's values for a license as stored: its codes, one row per metadata entry, blank rows after. */
export function modelValues(l: LicenseRecord): FormBody {
  const entries = Object.entries(l.metadata ?? {});
  const values: FormBody = { entitlements: l.entitlements.join(' '), metaRows: String(entries.length + BLANK_ROWS) };
  entries.forEach(([key, value], i) => Object.assign(values, { [`metaKey${i}`]: key, [`metaValue${i}`]: value, [`metaWas${i}`]: key }));
  return values;
}

const rowCount = (f: FormBody) => {
  const n = Number(f.metaRows);
  return Number.isInteger(n) && n >= 0 ? Math.min(n, ROWS_MAX) : 0;
};

export function modelSection(csrf: string, action: string, form: FormState): SafeHtml {
  const rows = rowCount(form.values);
  const fieldsetError = form.errors.metadata;
  return html`<section class="spaced" aria-labelledby="model-title"><h2 id="model-title">Entitlements and metadata</h2>
<form class="panel limit" method="post" action="${action}" novalidate>
${formError(form)}
${csrfInput(csrf)}
<input type="hidden" name="metaRows" value="${String(rows)}">
${input({ name: 'entitlements', label: 'Entitlements', form, hint: 'Features this license unlocks, e.g. "pro export.pdf": lower-case codes separated by spaces. Apps check them; tokens carry them.', attrs: html` autocomplete="off" spellcheck="false"` })}
<fieldset${fieldsetError ? html` aria-describedby="metadata-error"` : ''}><legend>Metadata</legend>
<p class="hint">Your own data on the license (e.g. a CRM id), never shown to customers or apps: at most ${METADATA_KEYS_MAX} entries, keys up to ${METADATA_KEY_MAX} characters, values up to ${METADATA_VALUE_MAX}. Empty a value to remove its entry.</p>
${fieldsetError ? html`<p id="metadata-error" class="hint error-text">${fieldMessage('Metadata', fieldsetError)}</p>` : ''}
${Array.from({ length: rows }, (_, i) => {
  const multiline = (form.values[`metaValue${i}`] ?? '').includes('\n');
  const value = { name: `metaValue${i}`, label: `Value ${i + 1}`, form, attrs: html` autocomplete="off"` };
  return html`<div class="row">${input({ name: `metaKey${i}`, label: `Key ${i + 1}`, form, attrs: html` autocomplete="off" spellcheck="false"` })}${multiline ? textarea(value) : input(value)}${
    form.values[`metaWas${i}`] ? html`<input type="hidden" name="metaWas${i}" value="${form.values[`metaWas${i}`]}">` : ''
  }</div>`;
})}
</fieldset>
<div class="form-foot"><button type="submit">Save entitlements and metadata</button></div>
</form></section>`;
}

/**
 * The editor's rows as a metadata change (the API's PATCH: null removes a key), with every row's
 * problem. Renamed and emptied entries are removed first, then the rows' keys set, so two rows that
 * swap their keys keep both. Only the keys the page showed are removed: an entry added meanwhile
 * through the API stays.
 */
function metadataChange(f: FormBody): { change: MetadataChange; issues: Issue[] } {
  const removed: MetadataChange = {};
  const set: Record<string, string> = {};
  const issues: Issue[] = [];
  const firstRow = new Map<string, number>();
  for (let i = 0; i < rowCount(f); i++) {
    const was = f[`metaWas${i}`] ?? '';
    const key = (f[`metaKey${i}`] ?? '').trim();
    const value = f[`metaValue${i}`] ?? '';
    if (was !== '' && was !== key) removed[was] = null;
    if (key === '') {
      if (value !== '') issues.push({ path: `metaKey${i}`, message: 'is required for a value' });
      continue;
    }
    if (key.length > METADATA_KEY_MAX) issues.push({ path: `metaKey${i}`, message: `must be at most ${METADATA_KEY_MAX} characters` });
    if (value === '') {
      removed[key] = null;
      continue;
    }
    if (value.length > METADATA_VALUE_MAX) issues.push({ path: `metaValue${i}`, message: `must be at most ${METADATA_VALUE_MAX} characters` });
    const earlier = firstRow.get(key);
    if (earlier !== undefined) issues.push({ path: `metaKey${i}`, message: `is the same as key ${earlier + 1}` });
    else firstRow.set(key, i);
    set[key] = value;
  }
  return { change: { ...removed, ...set }, issues };
}

/** Saves the editor: entitlements replace the license's set, metadata changes key by key. Bad input: the page again, nothing stored. */
export async function saveModel(req: FastifyRequest, reply: FastifyReply, services: Services, key: string, licensePage: LicensePageWith): Promise<FastifyReply> {
  const f = formOf(req);
  const { principal } = req.dashboard;
  try {
    // A post without the field (not this form's) leaves the set as it is.
    const entitlements = f.entitlements === undefined ? undefined : codesOf(f.entitlements);
    const { change, issues } = metadataChange(f);
    const problem = entitlements && codesProblem(entitlements);
    if (problem) issues.unshift({ path: 'entitlements', message: problem });
    const current = await services.licenses.get(principal, key);
    // The count rule on what the save would leave, whatever else is wrong with the rows (the service checks it again in its unit).
    const countable = Object.fromEntries(Object.entries(change).filter(([k]) => k.length <= METADATA_KEY_MAX).map(([k, v]) => [k, v?.slice(0, METADATA_VALUE_MAX) ?? null]));
    try {
      applyMetadata(current.metadata, countable);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'invalid_request') throw error;
      issues.push(...(error.issues ?? []).filter((i) => i.path === 'metadata'));
    }
    // Rows with problems are named row by row above: the schema then checks the rest, not them again in its words.
    const rowsChecked = issues.some((i) => i.path.startsWith('meta'));
    const body = withIssues(issues, () => parseWith(UpdateLicenseBody, { entitlements, ...(rowsChecked ? {} : { metadata: change }) }));
    await services.licenses.update(principal, key, body);
    return redirectWith(reply, `/dashboard/licenses/${encodeURIComponent(key)}`, 'license-model-saved');
  } catch (error) {
    const errors = fieldErrors(error);
    if (!errors || (error instanceof AppError && error.code === 'not_found')) throw error;
    // A schema issue of one metadata key (metadata.<key>) is the fieldset's.
    for (const [field, message] of Object.entries(errors)) {
      if (field === 'metadata' || !field.startsWith('metadata')) continue;
      delete errors[field];
      errors.metadata ??= message;
    }
    return licensePage(req, reply, services, key, { status: 400, model: { values: f, errors } });
  }
}

// ---- Key rotation --------------------------------------------------------------------------------

/**
 * Rotate key: asks first (with the e-mail to the customer as a choice when the license has an
 * address), then answers the new key on its own page, once; the old key is unknown from then on.
 */
export async function rotateKey(req: FastifyRequest, reply: FastifyReply, services: Services, key: string, licensePage: LicensePageWith): Promise<FastifyReply> {
  const { principal, viewer } = req.dashboard;
  const license = await services.licenses.get(principal, key);
  const path = `/dashboard/licenses/${encodeURIComponent(key)}`;
  if (!confirmed(req)) {
    return askFirst(req, reply, {
      section: '/dashboard/licenses',
      title: 'Rotate the key of this license?',
      text: `A new key replaces ${key}, which stops working at once everywhere: apps holding it must be given the new key. Devices, subscription, purchases and the audit log stay with the license.`,
      action: `${path}/rotate-key`,
      button: 'Rotate key',
      cancel: path,
      extra: license.email
        ? html`<div class="field"><label class="check" for="f-notify"><input id="f-notify" name="notify" type="checkbox" value="on"><span><strong>E-mail the new key to ${license.email}</strong></span></label></div>`
        : undefined,
    });
  }
  const notify = checked(formOf(req).notify);
  let rotated;
  try {
    rotated = await services.licenses.rotateKey(principal, key, { notify });
  } catch (error) {
    // Only `notify` without an address can be refused here (a forged post: the page offers it only with one).
    if (!(error instanceof AppError) || error.code !== 'invalid_request') throw error;
    return licensePage(req, reply, services, key, { status: 400, notice: { tone: 'bad', text: 'This license has no e-mail address to send the new key to: add one first, or rotate without the e-mail.' } });
  }
  const next = `/dashboard/licenses/${encodeURIComponent(rotated.key)}`;
  // The answer to the POST, not a redirect: the new key is shown here, once, and nowhere a reload re-sends it.
  return sendPage(
    reply.header('cache-control', 'no-store'),
    200,
    page({
      title: 'New license key',
      viewer,
      section: '/dashboard/licenses',
      narrow: true,
      content: html`<div class="panel">${pageHead('New license key', html`The old key <span class="key-text">${key}</span> no longer works anywhere.`)}
<div class="secret"><code id="new-license-key" aria-label="New license key">${rotated.key}</code><button type="button" class="secondary small" data-copy-target="new-license-key" data-copied="New license key copied to the clipboard." hidden>Copy key</button></div>
<p id="copy-status" class="hint" role="status" aria-live="polite"></p>
<p class="lead">${notify ? `The new key is on its way to ${license.email}.` : 'Give it to your customer: apps need it to activate and validate again.'} The devices already activated keep their slots.</p>
<div class="form-foot"><a class="button" href="${next}">Open the license</a></div></div>`,
    }),
  );
}

export const MODEL_NOTICES: Record<string, Notice> = {
  'license-model-saved': { tone: 'ok', text: 'Entitlements and metadata saved.' },
};

export const modelForm = (l: LicenseRecord, form?: FormState) => form ?? emptyForm(modelValues(l));

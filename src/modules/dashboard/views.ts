import { type Access, type Area, permits } from '../../core/access.ts';
import { html, type SafeHtml } from '../../http/html.ts';
import { type Notice, renderNotice } from '../../http/web/notice.ts';
import { layout as webLayout } from '../../http/web/pages.ts';
import { formatDate } from '../mail/format.ts';

/** What a signed-in page knows of its viewer (the layout's header and every form's CSRF token). */
export interface Viewer {
  email: string;
  csrf: string;
  /** The member's role: the navigation shows only the sections it may read. */
  access: Access;
}

export interface NavEntry {
  label: string;
  href: string;
  /** The screen's area (screens.ts sets it from the screen). */
  area?: Area;
}

/** Entries of the navigation; `screens.ts` fills it from the screen list. */
export const NAV: NavEntry[] = [];

const csrfInput = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`;
export { csrfInput };

/** The dashboard's frame. Signed-in pages get the navigation (the current section marked) and the log-out button. */
export function page(o: { title: string; content: SafeHtml; viewer?: Viewer; section?: string; notice?: Notice; narrow?: boolean }): string {
  const who =
    o.viewer &&
    html`<span class="who">${o.viewer.email}</span>
<form method="post" action="/dashboard/logout">${csrfInput(o.viewer.csrf)}<button type="submit" class="link">Log out</button></form>`;
  const nav =
    o.viewer &&
    html`<nav class="nav" aria-label="Dashboard"><ul>${NAV.filter((n) => permits(o.viewer!.access, n.area, 'read')).map(
      (n) => html`<li><a href="${n.href}"${o.section === n.href ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
    )}</ul></nav>`;
  return webLayout({
    title: o.title,
    site: 'Tessera dashboard',
    home: '/dashboard',
    stylesheet: '/dashboard/assets/dashboard.css',
    script: '/dashboard/assets/dashboard.js',
    who,
    nav,
    narrow: o.narrow,
    content: html`${renderNotice(o.notice)}${o.content}`,
    footer: 'Tessera · self-hosted licensing',
  });
}

/** The head of a page: its one h1, a line under it and the page's main actions. */
export const pageHead = (title: string, lead?: string | SafeHtml, actions?: SafeHtml, crumbs?: SafeHtml) =>
  html`<div class="page-head"><div>${crumbs && html`<p class="crumbs">${crumbs}</p>`}<h1>${title}</h1>${lead && html`<p class="lead">${lead}</p>`}</div>${
    actions && html`<div class="actions">${actions}</div>`
  }</div>`;

/** An empty list says what to do next. */
export const emptyState = (text: string, action?: SafeHtml) => html`<div class="panel empty-state"><p>${text}</p>${action}</div>`;

export const when = (ms: number | null, never = 'Never') => (ms === null ? never : formatDate(ms));

/** A submitted form's values and what was wrong with them. */
export interface FormState {
  values: Record<string, string | undefined>;
  errors: Record<string, string>;
}

export const emptyForm = (values: Record<string, string | undefined> = {}): FormState => ({ values, errors: {} });

interface FieldOptions {
  name: string;
  label: string;
  form: FormState;
  type?: string;
  hint?: string;
  required?: boolean;
  /** Extra attributes: autocomplete, maxlength, min, max... */
  attrs?: SafeHtml;
  /** Takes more room in a row of filters. */
  wide?: boolean;
}

/**
 * A field's error as a sentence in the form's words: a rule's words ("must be at least 1") get the
 * field's label before them; a whole sentence (a service's own message) stays as it is.
 */
export const fieldMessage = (label: string, message: string) => (/^[a-z]/.test(message) ? `${label} ${message}.` : message);

function described(o: { name: string; label: string; hint?: string }, error: string | undefined) {
  const id = `f-${o.name}`;
  const note = error ? html`<p id="${id}-error" class="hint error-text">${fieldMessage(o.label, error)}</p>` : o.hint ? html`<p id="${id}-hint" class="hint">${o.hint}</p>` : '';
  const aria = error ? html` aria-invalid="true" aria-describedby="${id}-error"` : o.hint ? html` aria-describedby="${id}-hint"` : '';
  return { id, note, aria };
}

export function input(o: FieldOptions): SafeHtml {
  const { id, note, aria } = described(o, o.form.errors[o.name]);
  return html`<div class="field${o.wide ? ' wide' : ''}"><label for="${id}">${o.label}</label>
<input id="${id}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.form.values[o.name] ?? ''}"${o.required ? html` required` : ''}${aria}${o.attrs}>${note}</div>`;
}

export function textarea(o: FieldOptions & { mono?: boolean }): SafeHtml {
  const { id, note, aria } = described(o, o.form.errors[o.name]);
  return html`<div class="field"><label for="${id}">${o.label}</label>
<textarea id="${id}" name="${o.name}"${o.mono ? html` class="mono"` : ''}${o.required ? html` required` : ''}${aria}${o.attrs}>${o.form.values[o.name] ?? ''}</textarea>${note}</div>`;
}

export function checkbox(o: { name: string; label: string; form: FormState; hint?: string }): SafeHtml {
  const { id, note, aria } = described(o, o.form.errors[o.name]);
  return html`<div class="field"><label class="check" for="${id}"><input id="${id}" name="${o.name}" type="checkbox" value="on"${
    o.form.values[o.name] === 'on' ? html` checked` : ''
  }${aria}><span><strong>${o.label}</strong></span></label>${note}</div>`;
}

export function select(o: { name: string; label: string; form: FormState; options: { value: string; label: string }[]; hint?: string }): SafeHtml {
  const { id, note, aria } = described(o, o.form.errors[o.name]);
  const current = o.form.values[o.name] ?? '';
  return html`<div class="field"><label for="${id}">${o.label}</label>
<select id="${id}" name="${o.name}"${aria}>${o.options.map((x) => html`<option value="${x.value}"${x.value === current ? html` selected` : ''}>${x.label}</option>`)}</select>${note}</div>`;
}

/**
 * Above the fields: a rule the service refused that names no field, or how many fields need a fix
 * (each says what beside it), so a reader of the top of the form learns of every problem at once.
 */
export function formError(form: FormState): SafeHtml | undefined {
  const fields = Object.keys(form.errors).filter((k) => k !== '_form').length;
  if (form.errors._form) return html`<div class="notice bad" role="alert">${form.errors._form}</div>`;
  if (fields === 0) return undefined;
  return html`<div class="notice bad" role="alert">${fields === 1 ? 'One field needs a fix' : `${fields} fields need a fix`}: see the message under each.</div>`;
}

/**
 * A destructive action asks first, without JavaScript: the action's POST without `confirm=yes`
 * answers this page, which posts the same fields again with it.
 */
export function confirmPage(o: {
  viewer: Viewer;
  section: string;
  title: string;
  text: string | SafeHtml;
  action: string;
  button: string;
  cancel: string;
  fields?: Record<string, string | undefined>;
  extra?: SafeHtml;
}): string {
  return page({
    title: o.title,
    viewer: o.viewer,
    section: o.section,
    narrow: true,
    content: html`<form class="panel" method="post" action="${o.action}" data-once>
<h1>${o.title}</h1>
<p class="lead">${o.text}</p>
${csrfInput(o.viewer.csrf)}
<input type="hidden" name="confirm" value="yes">
${Object.entries(o.fields ?? {}).map(([name, value]) => (value === undefined ? '' : html`<input type="hidden" name="${name}" value="${value}">`))}
${o.extra}
<div class="form-foot"><button type="submit" class="danger">${o.button}</button><a class="button secondary" href="${o.cancel}">Cancel</a></div>
</form>`,
  });
}

/** A table with header cells; `rows` are already rendered `<tr>`s. */
export const table = (caption: string, headers: (string | { text: string | SafeHtml; className: string })[], rows: SafeHtml[]) =>
  html`<div class="table-wrap"><table><caption class="sr-only">${caption}</caption><thead><tr>${headers.map((h) =>
    typeof h === 'string' ? html`<th scope="col">${h}</th>` : html`<th scope="col" class="${h.className}">${h.text}</th>`,
  )}</tr></thead><tbody>${rows}</tbody></table></div>`;

/** A small form whose one button posts an action (destructive ones come back to a confirmation page). */
export const actionButton = (viewer: Viewer, action: string, label: string | SafeHtml, className = 'secondary small', fields: Record<string, string> = {}) =>
  html`<form method="post" action="${action}">${csrfInput(viewer.csrf)}${Object.entries(fields).map(
    ([n, v]) => html`<input type="hidden" name="${n}" value="${v}">`,
  )}<button type="submit" class="${className}">${label}</button></form>`;

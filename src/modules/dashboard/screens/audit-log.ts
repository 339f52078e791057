import { html } from '../../../http/html.ts';
import { AUDIT_TYPES, type AuditType } from '../../audit/service.ts';
import { fieldErrors } from '../forms.ts';
import { render, type Screen } from '../screen.ts';
import { emptyForm, emptyState, type FormState, formError, input, pageHead, select } from '../views.ts';
import { auditTable, TYPE_LABEL } from './license-audit.ts';

const SECTION = '/dashboard/audit';
const PAGE_SIZE = 50;

type Query = { type?: string; key?: string; cursor?: string };

/** The account-wide audit log: every license and device change, newest first, by type and license key (GET /api/v1/events's list). */
export const auditLogScreen: Screen = {
  area: 'licenses',
  nav: { label: 'Audit log', href: SECTION },
  routes: async (app, { services }) => {
    app.get<{ Querystring: Query }>(SECTION, async (req, reply) => {
      const { principal, account } = req.dashboard;
      const type = AUDIT_TYPES.find((t) => t === req.query.type);
      const key = req.query.key?.trim().slice(0, 64) || undefined;
      const cursor = req.query.cursor?.slice(0, 512) || undefined;
      const filters = { type: type ?? '', key: key ?? '' };
      let form: FormState = emptyForm(filters);
      let page: Awaited<ReturnType<typeof services.audit.listAccount>> = { data: [], nextCursor: null };
      let status = 200;
      try {
        page = await services.audit.listAccount(principal, { type, licenseKey: key, limit: PAGE_SIZE, cursor });
      } catch (error) {
        const errors = fieldErrors(error, { cursor: '_form' });
        if (!errors) throw error;
        form = { values: filters, errors: { _form: 'This page of the log is not one we gave out. Start again from the newest entries.' } };
        status = 400;
      }
      const query = (extra: Record<string, string>) => {
        const params = new URLSearchParams(Object.entries({ ...filters, ...extra }).filter(([, v]) => v));
        return params.size ? `?${params}` : '';
      };
      const filtered = Boolean(type || key);
      const body =
        page.data.length === 0
          ? emptyState(cursor ? 'No older entries.' : filtered ? 'No change matches these filters.' : 'No license has changed yet.')
          : await auditTable(services, principal, account.email, page.data, { caption: 'Audit log', withLicense: true });
      return render(req, reply, {
        status,
        title: 'Audit log',
        section: SECTION,
        content: html`${pageHead('Audit log', 'Every change to your licenses and their devices, newest first, with who made it. Kept a year (AUDIT_RETENTION_DAYS).')}
${formError(form)}
<form class="filters" method="get" action="${SECTION}" role="search">
${select({ name: 'type', label: 'Change', form, options: [{ value: '', label: 'Every change' }, ...AUDIT_TYPES.map((t: AuditType) => ({ value: t, label: TYPE_LABEL[t] }))] })}
${input({ name: 'key', label: 'License key', form, wide: true, attrs: html` maxlength="64" autocomplete="off" spellcheck="false"` })}
<button type="submit">Filter</button>${filtered ? html`<a href="${SECTION}">Clear</a>` : ''}
</form>
${body}
<div class="pager">${cursor ? html`<a href="${SECTION}${query({})}">Newest entries</a>` : html`<span></span>`}${
          page.nextCursor ? html`<a class="button secondary" rel="next" href="${SECTION}${query({ cursor: page.nextCursor })}">Older entries</a>` : ''
        }</div>`,
      });
    });
  },
};

import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Scope } from '../../../core/access.ts';
import { notFound } from '../../../core/errors.ts';
import { parseTimestamp } from '../../../core/time.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import { fieldErrors, optional, parseWith, text } from '../forms.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen, type ScreenOptions } from '../screen.ts';
import { actionButton, csrfInput, emptyForm, emptyState, type FormState, formError, input, pageHead, select, table, when } from '../views.ts';

const SECTION = '/dashboard/api-keys';
/** The key's label (the service takes any name; the dashboard bounds it); the service checks scope and expiry. */
const KeyForm = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) });

/** What each scope lets a key do, in the words the form and the list use (core/access.ts decides). */
const SCOPE_LABELS: Record<Scope, string> = {
  full: 'Full: everything the server API does',
  read: 'Read only: GET requests only',
  licenses: 'Licenses: licenses, devices and validation only',
};
const SCOPE_NAMES: Record<Scope, string> = { full: 'Full', read: 'Read only', licenses: 'Licenses' };

async function keysPage(req: FastifyRequest, reply: FastifyReply, services: ScreenOptions['services'], o: { status?: number; form?: FormState; created?: { name: string; secret: string } } = {}) {
  const { principal, viewer } = req.dashboard;
  const keys = (await services.apiKeys.list(principal)).filter((k) => k.revokedAt === null);
  const now = Date.now();
  const form = o.form ?? emptyForm({ name: '', scope: 'full' });
  const created: SafeHtml | '' = o.created
    ? html`<section class="notice ok" role="status" aria-labelledby="new-key-title"><h2 id="new-key-title">Your new API key "${o.created.name}"</h2>
<p>Copy it now: it is shown only this once. Use it as <code>Authorization: Bearer …</code> on the server API.</p>
<div class="secret"><code id="new-api-key" aria-label="New API key">${o.created.secret}</code><button type="button" class="secondary small" data-copy-target="new-api-key" data-copied="API key copied to the clipboard." hidden>Copy key</button></div>
<p id="copy-status" class="hint" role="status" aria-live="polite"></p></section>`
    : '';
  const list =
    keys.length === 0
      ? emptyState('No API keys yet. Create one for your store or backend to create licenses through the server API.')
      : table(
          'API keys',
          ['Name', 'Key', 'Scope', 'Expires', { text: 'Created', className: 'hide-phone' }, 'Last used', { text: 'Action', className: 'num' }],
          keys.map(
            (k) =>
              html`<tr><td>${k.name}</td><td><code>${k.keyPrefix}…</code></td><td>${SCOPE_NAMES[k.scope]}</td><td>${k.expiresAt !== null && k.expiresAt <= now ? 'Expired' : when(k.expiresAt)}</td><td class="hide-phone">${when(k.createdAt)}</td><td>${when(k.lastUsedAt, 'Never')}</td><td class="num">${actionButton(viewer, `${SECTION}/${k.id}/revoke`, `Revoke ${k.name}…`, 'secondary small')}</td></tr>`,
          ),
        );
  return render(req, reply, {
    status: o.status,
    title: 'API keys',
    section: SECTION,
    content: html`${pageHead('API keys', 'Keys for the server API: your store or backend creates and manages licenses with them.')}
${created}
<div class="grid top">
<div>${list}</div>
<form class="panel" method="post" action="${SECTION}" novalidate>
<h2>Create an API key</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${input({ name: 'name', label: 'Name', form, required: true, hint: 'Where it is used, e.g. "Web shop".', attrs: html` maxlength="100"` })}
${select({ name: 'scope', label: 'Scope', form, options: Object.entries(SCOPE_LABELS).map(([value, label]) => ({ value, label })), hint: 'Give a key no more than it needs: a leaked read-only key cannot change anything.' })}
${input({ name: 'expiresAt', label: 'Expires on', type: 'date', form, hint: 'Optional: the key stops working at 00:00 UTC that day.' })}
<div class="form-foot"><button type="submit">Create API key</button></div>
</form>
</div>`,
  });
}

export const apiKeysScreen: Screen = {
  area: 'apiKeys',
  nav: { label: 'API keys', href: SECTION },
  notices: { 'key-revoked': { tone: 'ok', text: 'API key revoked. Requests with it are refused from now on.' } },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => keysPage(req, reply, services));

    // The secret is in this one answer only (no redirect: it is never stored anywhere it could be shown again).
    app.post(SECTION, async (req, reply) => {
      const f = formOf(req);
      try {
        const { name } = parseWith(KeyForm, { name: text(f.name) ?? '' });
        const expires = optional(f.expiresAt);
        const expiresAt = expires === undefined ? null : parseTimestamp(expires);
        const { secret } = await services.apiKeys.create(req.dashboard.principal, name, { scope: f.scope ?? 'full', expiresAt });
        return keysPage(req, reply, services, { created: { name, secret } });
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return keysPage(req, reply, services, { status: 400, form: { values: f, errors } });
      }
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/revoke`, async (req, reply) => {
      const { principal } = req.dashboard;
      const key = (await services.apiKeys.list(principal)).find((k) => k.id === req.params.id && k.revokedAt === null);
      if (!key) throw notFound('API key');
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: `Revoke ${key.name}?`,
          text: `Requests with ${key.keyPrefix}… are refused at once. Anything using this key stops working.`,
          action: `${SECTION}/${key.id}/revoke`,
          button: 'Revoke API key',
          cancel: SECTION,
        });
      }
      await services.apiKeys.revoke(principal, key.id);
      return redirectWith(reply, SECTION, 'key-revoked');
    });
  },
};

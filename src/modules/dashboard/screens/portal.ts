import type { FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../../../http/html.ts';
import { Email } from '../../../http/schema-helpers.ts';
import { Type } from 'typebox';
import { fieldErrors, parseWith, text } from '../forms.ts';
import { formOf, render, type Screen } from '../screen.ts';
import { csrfInput, emptyForm, type FormState, formError, input, pageHead, when } from '../views.ts';

const SECTION = '/dashboard/portal';
/** The server API's body for a private session (the same schema). */
const PrivateSessionForm = Type.Object({ email: Email });

function portalPage(req: FastifyRequest, reply: FastifyReply, o: { status?: number; form?: FormState; link?: { url: string; expiresAt: number; email: string } } = {}) {
  const form = o.form ?? emptyForm();
  const link =
    o.link &&
    html`<section class="card" aria-labelledby="link-title"><h2 id="link-title">Private portal link for ${o.link.email}</h2>
<p class="hint">It shows only the licenses of your products for this address, and works until ${when(o.link.expiresAt)}. Anyone with the link can open it: send it only to the customer.</p>
<div class="secret"><code id="portal-link">${o.link.url}</code><button type="button" class="secondary small" data-copy-target="portal-link" data-copied="Portal link copied to the clipboard." hidden>Copy link</button></div>
<p id="copy-status" class="hint" role="status" aria-live="polite"></p>
<a class="button" href="${o.link.url}" target="_blank" rel="noopener noreferrer">Open the portal</a></section>`;
  return render(req, reply, {
    status: o.status,
    title: 'Customer portal',
    section: SECTION,
    content: html`${pageHead('Customer portal', 'Customers see their licenses and reset their devices at /portal. Open it for a customer with a private link.')}
${link}
<form class="panel" method="post" action="${SECTION}" novalidate>
<h2>Make a private link</h2>
${formError(form)}
${csrfInput(req.dashboard.viewer.csrf)}
${input({ name: 'email', label: "Customer's e-mail", type: 'email', form, required: true, hint: 'The link is valid for 12 hours.', attrs: html` maxlength="254"` })}
<div class="form-foot"><button type="submit">Create link</button></div>
</form>`,
  });
}

export const portalScreen: Screen = {
  area: 'portal',
  nav: { label: 'Portal', href: SECTION },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => portalPage(req, reply));

    app.post(SECTION, async (req, reply) => {
      const f = formOf(req);
      try {
        const { email } = parseWith(PrivateSessionForm, { email: text(f.email) ?? '' });
        const session = await services.portal.createPrivateSession(req.dashboard.principal, email);
        return portalPage(req, reply, { link: { ...session, email }, form: emptyForm({ email }) });
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return portalPage(req, reply, { status: 400, form: { values: f, errors } });
      }
    });
  },
};

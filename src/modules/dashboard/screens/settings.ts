import type { FastifyReply, FastifyRequest } from 'fastify';
import { permits } from '../../../core/access.ts';
import { html } from '../../../http/html.ts';
import type { Services } from '../../../services.ts';
import { brandLogoPath, DISPLAY_NAME_MAX } from '../../branding/service.ts';
import { fieldErrors } from '../forms.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen } from '../screen.ts';
import { actionButton, csrfInput, emptyForm, type FormState, formError, input, pageHead } from '../views.ts';

const SECTION = '/dashboard/settings';

async function settingsPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: { status?: number; form?: FormState } = {}) {
  const { principal, viewer } = req.dashboard;
  const brand = await services.branding.get(principal.accountId);
  const form = o.form ?? emptyForm({ displayName: brand.displayName ?? '', accentColor: brand.accentColor ?? '' });
  const logo = brandLogoPath(brand);
  // Owners and admins change it; a viewer sees it (core/access.ts). The server refuses a viewer's post whatever the page shows.
  const changes = permits(principal.access, 'settings', 'write');
  const logoError = form.errors.logo;
  return render(req, reply, {
    status: o.status,
    title: 'Branding',
    section: SECTION,
    content: html`${pageHead('Branding', 'How your customers see you: the license portal and every e-mail they get from you carry your name, logo and colour.')}
<div class="grid top">
<form class="panel" method="post" action="${SECTION}" enctype="multipart/form-data" novalidate>
<h2>Your brand</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${input({ name: 'displayName', label: 'Display name', form, hint: `The sender's name of your e-mails, their signature and the portal's header. At most ${DISPLAY_NAME_MAX} characters; empty: none.`, attrs: html` maxlength="${DISPLAY_NAME_MAX}" autocomplete="organization"` })}
${input({ name: 'accentColor', label: 'Accent colour', form, hint: 'As #rrggbb, e.g. #1d4ed8: the portal\'s buttons and links, the band above your e-mails.', attrs: html` maxlength="7" spellcheck="false" autocomplete="off"` })}
<div class="field"><label for="f-logo">${logo ? 'Replace the logo' : 'Logo'}</label><input id="f-logo" name="logo" type="file" accept="image/png,image/jpeg,image/webp"${
      logoError ? html` aria-invalid="true" aria-describedby="f-logo-error"` : html` aria-describedby="f-logo-hint"`
    }>${logoError ? html`<p id="f-logo-error" class="hint error-text">${logoError}</p>` : html`<p id="f-logo-hint" class="hint">PNG, JPEG or WebP, at most 256 KiB. Leave empty to keep the current one.</p>`}</div>
${changes ? html`<div class="form-foot"><button type="submit">Save branding</button></div>` : html`<p class="hint">Owners and admins change the branding.</p>`}
</form>
<section class="card" aria-labelledby="logo-title"><h2 id="logo-title">Current logo</h2>
${logo ? html`<img class="product-image" src="${logo}" alt="Your logo">` : html`<p class="hint">No logo yet: the portal and e-mails show your display name alone.</p>`}
${logo && changes ? html`<div class="form-foot">${actionButton(viewer, `${SECTION}/logo/delete`, 'Remove logo…', 'secondary small')}</div>` : ''}
</section>
</div>`,
  });
}

/** The account's branding (decisions.md, "Operators: teams and security"): owners and admins set it; shown in the portal and customer e-mails. */
export const settingsScreen: Screen = {
  area: 'settings',
  nav: { label: 'Branding', href: SECTION },
  notices: {
    'branding-saved': { tone: 'ok', text: 'Branding saved. The portal and your next e-mails carry it.' },
    'logo-removed': { tone: 'ok', text: 'Logo removed.' },
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => settingsPage(req, reply, services));

    // A multipart form (the logo): read before the handler, its CSRF token checked with every form's.
    app.post(SECTION, { config: { multipart: true } }, async (req, reply) => {
      const f = formOf(req) as Record<string, unknown>;
      const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
      const values = { displayName: str(f.displayName), accentColor: str(f.accentColor) };
      try {
        await services.branding.update(req.dashboard.principal, { ...values, logo: Buffer.isBuffer(f.logo) ? f.logo : undefined });
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return settingsPage(req, reply, services, { status: 400, form: { values, errors } });
      }
      return redirectWith(reply, SECTION, 'branding-saved');
    });

    app.post(`${SECTION}/logo/delete`, async (req, reply) => {
      if (!confirmed(req)) {
        return askFirst(req, reply, { section: SECTION, title: 'Remove the logo?', text: 'The portal and your e-mails show your display name alone.', action: `${SECTION}/logo/delete`, button: 'Remove logo', cancel: SECTION });
      }
      await services.branding.removeLogo(req.dashboard.principal);
      return redirectWith(reply, SECTION, 'logo-removed');
    });
  },
};

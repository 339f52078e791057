import type { FastifyReply, FastifyRequest } from 'fastify';
import { html, SafeHtml } from '../../../http/html.ts';
import type { Services } from '../../../services.ts';
import type { Enrolment } from '../../two-factor/service.ts';
import { fieldErrors } from '../forms.ts';
import { formOf, redirectWith, render, type Screen } from '../screen.ts';
import { csrfInput, emptyForm, type FormState, formError, input, pageHead } from '../views.ts';

const SECTION = '/dashboard/account/two-factor';
const codeField = (form: FormState, label = 'Code from your app') =>
  input({ name: 'code', label, form: { ...form, values: {} }, required: true, attrs: html` autocomplete="one-time-code" maxlength="20"` });

/** The page in each state: off (a button to start), enrolling (QR code and the first code), on (recovery codes left, turn off). */
async function twoFactorPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: { status?: number; form?: FormState; enrolment?: Enrolment; recoveryCodes?: string[] } = {}) {
  const { member, viewer } = req.dashboard;
  const form = o.form ?? emptyForm();
  const enabled = await services.twoFactor.isEnabled(member.id);
  const required = await services.twoFactor.isRequired(member.accountId);
  const enrolment = o.enrolment ?? (enabled ? undefined : await services.twoFactor.pending(member));
  let body: SafeHtml;
  if (o.recoveryCodes) {
    body = html`<section class="notice ok" role="status" aria-labelledby="codes-title"><h2 id="codes-title">Two-factor sign-in is on. Your recovery codes</h2>
<p>Keep these ${o.recoveryCodes.length} codes somewhere safe: each signs you in once if you lose your phone. They are shown only this once.</p>
<ul class="codes" aria-label="Recovery codes">${o.recoveryCodes.map((c) => html`<li><code>${c}</code></li>`)}</ul></section>
<p><a class="button" href="/dashboard">Continue to the dashboard</a></p>`;
  } else if (enabled) {
    const left = await services.twoFactor.unusedRecoveryCodes(member.id);
    body = html`<section class="card"><h2>Two-factor sign-in is on</h2><p>You sign in with your password and a code from your authenticator app. Recovery codes left: ${left}.</p></section>
${
  required
    ? html`<p class="hint">This account requires two-factor sign-in: it cannot be turned off.</p>`
    : html`<form class="panel" method="post" action="${SECTION}/disable" novalidate><h2>Turn off two-factor sign-in</h2>${formError(form)}${csrfInput(viewer.csrf)}${codeField(form, 'A code from your app, or a recovery code')}<div class="form-foot"><button type="submit" class="danger">Turn off</button></div></form>`
}`;
  } else if (enrolment) {
    // The QR code is an SVG the qrcode library drew from our own otpauth URI: markup we made, not input.
    const qr = new SafeHtml(enrolment.qrSvg.replace('<svg ', '<svg role="img" aria-label="QR code for your authenticator app" class="qr" '));
    body = html`<form class="panel" method="post" action="${SECTION}/confirm" novalidate><h2>Scan this code with your authenticator app</h2>
${qr}
<p class="hint">Or type this key into the app: <code id="totp-secret">${enrolment.secret}</code></p>
${formError(form)}${csrfInput(viewer.csrf)}${codeField(form)}
<div class="form-foot"><button type="submit">Turn on</button></div></form>`;
  } else {
    body = html`<form class="panel" method="post" action="${SECTION}/start"><h2>Protect your sign-in</h2>
<p>With two-factor sign-in, your password alone does not get anyone in: you also enter a code from an authenticator app on your phone.</p>
${csrfInput(viewer.csrf)}<div class="form-foot"><button type="submit">Set up two-factor sign-in</button></div></form>`;
  }
  return render(req, reply, { status: o.status, title: 'Two-factor sign-in', section: '/dashboard/account', content: html`${pageHead('Two-factor sign-in')}${body}` });
}

export const twoFactorScreen: Screen = {
  area: 'profile',
  notices: {
    'two-factor-required': { tone: 'warn', text: 'This account requires two-factor sign-in. Set it up to continue.' },
    'two-factor-off': { tone: 'ok', text: 'Two-factor sign-in is off.' },
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => twoFactorPage(req, reply, services));

    app.post(`${SECTION}/start`, async (req, reply) => twoFactorPage(req, reply, services, { enrolment: await services.twoFactor.start(req.dashboard.member) }));

    app.post(`${SECTION}/confirm`, async (req, reply) => {
      try {
        const recoveryCodes = await services.twoFactor.confirm(req.dashboard.member.id, formOf(req).code ?? '');
        return twoFactorPage(req, reply, services, { recoveryCodes });
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return twoFactorPage(req, reply, services, { status: 400, form: { values: {}, errors } });
      }
    });

    app.post(`${SECTION}/disable`, async (req, reply) => {
      try {
        await services.twoFactor.disable(req.dashboard.member, formOf(req).code ?? '');
        return redirectWith(reply, SECTION, 'two-factor-off');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return twoFactorPage(req, reply, services, { status: 400, form: { values: {}, errors } });
      }
    });
  },
};

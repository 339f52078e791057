import type { FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../../../http/html.ts';
import type { Services } from '../../../services.ts';
import { MIN_PASSWORD } from '../../accounts/service.ts';
import { ROLE_NAMES } from '../../members/roles.ts';
import { EMAIL_CHANGE_VALIDITY_MS } from '../service.ts';
import { fieldErrors } from '../forms.ts';
import { formOf, redirectWith, render, type Screen } from '../screen.ts';
import { csrfInput, emptyForm, type FormState, formError, input, pageHead, when } from '../views.ts';

const SECTION = '/dashboard/account';

type Forms = { password?: FormState; email?: FormState };

async function accountPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: { status?: number; forms?: Forms } = {}) {
  const { account, member, viewer } = req.dashboard;
  const form = o.forms?.password ?? emptyForm();
  const emailForm = o.forms?.email ?? emptyForm();
  const pending = member.firstOwner ? await services.dashboard.pendingEmailChange(account.id) : undefined;
  const administrator = member.firstOwner && (await services.accounts.isAdministrator(account.id));
  const emailChangeForm = html`<form class="panel" method="post" action="${SECTION}/email" novalidate>
<h2>Change your e-mail address</h2>
<p class="hint">You sign in with it, and account e-mails go to it. We send a link to the new address; the change is made when it is opened (within ${EMAIL_CHANGE_VALIDITY_MS / 60_000} minutes).</p>
${pending && html`<p class="notice warn" role="status">Waiting for ${pending.newEmail} to confirm, until ${when(pending.expiresAt)}. Asking again replaces that link.</p>`}
${formError(emailForm)}
${csrfInput(viewer.csrf)}
${input({ name: 'newEmail', label: 'New e-mail address', type: 'email', form: emailForm, required: true, attrs: html` autocomplete="email" maxlength="254"` })}
${input({ name: 'password', label: 'Your password', type: 'password', form: { ...emailForm, values: {} }, required: true, attrs: html` autocomplete="current-password"` })}
<div class="form-foot"><button type="submit">Send the confirmation link</button></div>
</form>`;
  return render(req, reply, {
    status: o.status,
    title: 'Account',
    section: SECTION,
    content: html`${pageHead('Account')}
<div class="grid top">
<section class="card" aria-labelledby="who-title"><h2 id="who-title">Your account</h2>
<dl class="facts"><div><dt>E-mail</dt><dd>${member.email}</dd></div><div><dt>Role</dt><dd>${ROLE_NAMES[member.role]}${member.firstOwner ? ' (first owner)' : ''}</dd></div><div><dt>Plan</dt><dd>${account.plan === 'plus' ? 'Plus' : 'Free'}</dd></div><div><dt>Since</dt><dd>${when(account.createdAt)}</dd></div></dl>
<p><a href="/dashboard/account/two-factor">Two-factor sign-in</a></p>
<p class="hint">${account.plan === 'plus' ? 'Plus includes product images in purchase e-mails.' : 'The plus plan adds product images to purchase e-mails; your server operator changes plans with the CLI.'}</p>
${administrator ? html`<p><a class="button secondary" href="/dashboard/instance/accounts">Manage the accounts of this installation</a></p>` : ''}
</section>
${member.firstOwner ? emailChangeForm : html`<section class="panel"><h2>Your e-mail address</h2><p class="hint">You were invited with this address. To sign in with another one, ask an owner to invite it.</p></section>`}
<form class="panel" method="post" action="${SECTION}/password" novalidate>
<h2>Change your password</h2>
<p class="hint">Every other browser signed in as you is signed out.</p>
${formError(form)}
${csrfInput(viewer.csrf)}
${input({ name: 'currentPassword', label: 'Current password', type: 'password', form: { ...form, values: {} }, required: true, attrs: html` autocomplete="current-password"` })}
${input({ name: 'newPassword', label: 'New password', type: 'password', form: { ...form, values: {} }, required: true, hint: `At least ${MIN_PASSWORD} characters.`, attrs: html` autocomplete="new-password" minlength="${MIN_PASSWORD}"` })}
<div class="form-foot"><button type="submit">Change password</button></div>
</form>
</div>`,
  });
}

export const accountScreen: Screen = {
  area: 'profile',
  nav: { label: 'Account', href: SECTION },
  notices: {
    'password-changed': { tone: 'ok', text: 'Password changed. Other browsers are signed out.' },
    'email-change-sent': { tone: 'ok', text: 'A confirmation link is on its way to the new address. Your e-mail address changes when you open it.' },
  },
  routes: async (app, { services, setSession, passwordLimit }) => {
    app.get(SECTION, async (req, reply) => accountPage(req, reply, services));

    app.post(`${SECTION}/email`, { preHandler: passwordLimit }, async (req, reply) => {
      const f = formOf(req);
      const newEmail = (f.newEmail ?? '').trim();
      try {
        await services.dashboard.requestEmailChange(req.dashboard.member, f.password ?? '', newEmail);
        return redirectWith(reply, SECTION, 'email-change-sent');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return accountPage(req, reply, services, { status: 400, forms: { email: { values: { newEmail }, errors } } });
      }
    });

    app.post(`${SECTION}/password`, { preHandler: passwordLimit }, async (req, reply) => {
      const f = formOf(req);
      try {
        const signedIn = await services.dashboard.changePassword(req.dashboard.member, f.currentPassword ?? '', f.newPassword ?? '');
        // This browser continues on a new session; every old one (this one's included) has ended.
        setSession(reply, signedIn);
        return redirectWith(reply, SECTION, 'password-changed');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return accountPage(req, reply, services, { status: 400, forms: { password: { values: {}, errors } } });
      }
    });
  },
};

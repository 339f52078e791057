import { html } from '../../http/html.ts';
import type { Notice } from '../../http/web/notice.ts';
import { MIN_PASSWORD } from '../accounts/service.ts';
import { csrfInput, type FormState, formError, input, page } from './views.ts';

const PASSWORD_HINT = `At least ${MIN_PASSWORD} characters.`;

/** First run (no account yet), sign-up (SIGNUP=open): the same form, other words. */
export function accountFormPage(d: { kind: 'setup' | 'signup'; form: FormState; csrf: string }): string {
  const setup = d.kind === 'setup';
  return page({
    title: setup ? 'Set up Tessera' : 'Create an account',
    narrow: true,
    content: html`<form class="panel" method="post" action="/dashboard/${d.kind}" novalidate>
<h1>${setup ? 'Set up Tessera' : 'Create an account'}</h1>
<p class="lead">${setup ? 'Welcome! Create the first operator account. You will use it to sign in to this dashboard.' : 'Create an operator account to sell and manage your software licenses.'}</p>
${formError(d.form)}
${csrfInput(d.csrf)}
${input({ name: 'email', label: 'E-mail address', type: 'email', form: d.form, required: true, attrs: html` autocomplete="email" maxlength="254"` })}
${input({ name: 'password', label: 'Password', type: 'password', form: { ...d.form, values: {} }, required: true, hint: PASSWORD_HINT, attrs: html` autocomplete="new-password" minlength="${MIN_PASSWORD}"` })}
<div class="form-foot"><button type="submit">${setup ? 'Create account' : 'Sign up'}</button>${setup ? '' : html`<a href="/dashboard/login">I have an account</a>`}</div>
</form>`,
  });
}

export function loginPage(d: { form: FormState; csrf: string; next?: string; signupOpen: boolean; notice?: Notice }): string {
  return page({
    title: 'Log in',
    narrow: true,
    notice: d.notice,
    content: html`<form class="panel" method="post" action="/dashboard/login" novalidate>
<h1>Log in</h1>
<p class="lead">Sign in to manage your products and licenses.</p>
${formError(d.form)}
${csrfInput(d.csrf)}
${d.next && html`<input type="hidden" name="next" value="${d.next}">`}
${input({ name: 'email', label: 'E-mail address', type: 'email', form: d.form, required: true, attrs: html` autocomplete="username" maxlength="254"` })}
${input({ name: 'password', label: 'Password', type: 'password', form: { ...d.form, values: {} }, required: true, attrs: html` autocomplete="current-password"` })}
<div class="form-foot"><button type="submit">Log in</button><a href="/dashboard/forgot">Forgot your password?</a></div>
${d.signupOpen ? html`<p class="hint">New here? <a href="/dashboard/signup">Create an account</a>.</p>` : ''}
</form>`,
  });
}

export function forgotPage(d: { form: FormState; csrf: string; notice?: Notice }): string {
  return page({
    title: 'Reset your password',
    narrow: true,
    notice: d.notice,
    content: html`<form class="panel" method="post" action="/dashboard/forgot" novalidate>
<h1>Reset your password</h1>
<p class="lead">Enter your account's e-mail address. We will send you a link to choose a new password; it works once, for 1 hour.</p>
${formError(d.form)}
${csrfInput(d.csrf)}
${input({ name: 'email', label: 'E-mail address', type: 'email', form: d.form, required: true, attrs: html` autocomplete="email" maxlength="254"` })}
<div class="form-foot"><button type="submit">Send the link</button><a href="/dashboard/login">Back to log in</a></div>
</form>`,
  });
}

export function resetPage(d: { form: FormState; csrf: string; token: string }): string {
  return page({
    title: 'Choose a new password',
    narrow: true,
    content: html`<form class="panel" method="post" action="/dashboard/reset" novalidate>
<h1>Choose a new password</h1>
<p class="lead">Every device signed in to your account will be signed out.</p>
${formError(d.form)}
${csrfInput(d.csrf)}
<input type="hidden" name="token" value="${d.token}">
${input({ name: 'password', label: 'New password', type: 'password', form: { ...d.form, values: {} }, required: true, hint: PASSWORD_HINT, attrs: html` autocomplete="new-password" minlength="${MIN_PASSWORD}"` })}
<div class="form-foot"><button type="submit">Set the new password</button></div>
</form>`,
  });
}

/** The second step of a sign-in with two-factor on: a code from the app, or a recovery code. */
export function codePage(d: { form: FormState; csrf: string; next?: string }): string {
  return page({
    title: 'Two-factor sign-in',
    narrow: true,
    content: html`<form class="panel" method="post" action="/dashboard/login/code" novalidate>
<h1>Two-factor sign-in</h1>
<p class="lead">Enter the 6-digit code your authenticator app shows, or one of your recovery codes.</p>
${formError(d.form)}
${csrfInput(d.csrf)}
${d.next && html`<input type="hidden" name="next" value="${d.next}">`}
${input({ name: 'code', label: 'Code', form: { ...d.form, values: {} }, required: true, attrs: html` autocomplete="one-time-code" inputmode="text" maxlength="20"` })}
<div class="form-foot"><button type="submit">Continue</button><a href="/dashboard/login">Start again</a></div>
</form>`,
  });
}

/** An invitation's page: the invitee chooses a password and joins (a GET changes nothing: mail scanners open links). */
export function invitationPage(d: { form: FormState; csrf: string; token: string; email: string; role: string }): string {
  return page({
    title: 'Join the dashboard',
    narrow: true,
    content: html`<form class="panel" method="post" action="/dashboard/invitation" novalidate>
<h1>Join the dashboard</h1>
<p class="lead">You are invited as <strong>${d.role}</strong>. You will sign in as ${d.email} with the password you choose here.</p>
${formError(d.form)}
${csrfInput(d.csrf)}
<input type="hidden" name="token" value="${d.token}">
${input({ name: 'password', label: 'Choose a password', type: 'password', form: { ...d.form, values: {} }, required: true, hint: PASSWORD_HINT, attrs: html` autocomplete="new-password" minlength="${MIN_PASSWORD}"` })}
<div class="form-foot"><button type="submit">Join</button></div>
</form>`,
  });
}

/** The e-mailed link's page: a button confirms (a GET changes nothing: mail scanners open links). */
export function emailConfirmPage(d: { csrf: string; token: string; newEmail: string }): string {
  return page({
    title: 'Confirm your new e-mail address',
    narrow: true,
    content: html`<form class="panel" method="post" action="/dashboard/email/confirm">
<h1>Confirm your new e-mail address</h1>
<p class="lead">Your Tessera dashboard account will sign in as ${d.newEmail}, and its e-mails will go there.</p>
${csrfInput(d.csrf)}
<input type="hidden" name="token" value="${d.token}">
<div class="form-foot"><button type="submit">Confirm ${d.newEmail}</button></div>
</form>`,
  });
}

export function messagePage(d: { title: string; text: string; action?: { text: string; href: string } }): string {
  return page({
    title: d.title,
    narrow: true,
    content: html`<div class="panel"><h1>${d.title}</h1><p class="lead">${d.text}</p>${d.action && html`<a class="button" href="${d.action.href}">${d.action.text}</a>`}</div>`,
  });
}

import { describe, expect, it } from 'vitest';
import { createTenant, useTestApp } from '../support/app.ts';
import { PASSWORD, signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { CapturingTransport, waitUntil } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

const confirmLinkIn = (text: string) => /http:\/\/[^\s]+\/dashboard\/email\/confirm\?token=[A-Za-z0-9_-]+/.exec(text)![0];
const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;
let counter = 0;
const freshAddress = () => `moved${++counter}-${Date.now()}@example.com`;

forEachStore('dashboard e-mail change', (kind) => {
  const transport = new CapturingTransport();
  const ctx = useTestApp(kind, { app: { mail: { transport, worker: { pollMs: 20 } } } });
  const pending = (accountId: string) => ctx.store.read.all(ctx.store.db.selectFrom('dashboard_email_changes').selectAll().where('account_id', '=', accountId));

  /** Asks for the change from the account page and returns the link e-mailed to the new address (as stored: lower case). */
  async function ask(browser: WebBrowser, newEmail: string): Promise<string> {
    const to = newEmail.toLowerCase();
    const links = () => transport.sent.filter((m) => m.to === to && m.kind === 'email_change').map((m) => confirmLinkIn(m.text));
    const before = links().length;
    await browser.request('GET', '/dashboard/account');
    const res = await browser.request('POST', '/dashboard/account/email', { newEmail, password: PASSWORD, csrf: browser.csrf });
    expect(res.status, res.body).toBe(303);
    expect(res.headers.location).toBe('/dashboard/account?notice=email-change-sent');
    await waitUntil(() => links().length > before);
    return links()[before]!;
  }

  /** Asks for a password-reset link through the form, as anyone may; returns the link e-mailed (one per fresh tenant). */
  async function askReset(browser: WebBrowser, email: string): Promise<string> {
    await browser.request('GET', '/dashboard/forgot');
    await browser.request('POST', '/dashboard/forgot', { email, csrf: browser.csrf });
    const mail = await transport.waitFor(email, 'password_reset');
    return /http:\/\/[^\s]+\/dashboard\/reset\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0];
  }

  describe('happy path', () => {
    it('changes the address once the new one confirms, tells the old one, and keeps the sessions', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const newEmail = freshAddress();
      const link = await ask(browser, newEmail.toUpperCase().replace('@EXAMPLE.COM', '@Example.com'));
      const page = await browser.request('GET', '/dashboard/account?notice=email-change-sent');
      expect(textOf(page.body)).toContain('A confirmation link is on its way to the new address.');
      expect(textOf(page.body)).toContain(`Waiting for ${newEmail} to confirm`);
      // Nothing changes before the link is used.
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);

      const elsewhere = new WebBrowser(ctx);
      const form = await elsewhere.request('GET', link);
      expect(form.status).toBe(200);
      expect(form.body).toContain('<h1>Confirm your new e-mail address</h1>');
      expect(textOf(form.body)).toContain(`will sign in as ${newEmail}`);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);

      const csrf = elsewhere.csrf;
      const done = await elsewhere.request('POST', '/dashboard/email/confirm', { token: tokenOf(link), csrf });
      expect(done.status).toBe(200);
      expect(textOf(done.body)).toContain(`You sign in as ${newEmail} from now on.`);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(newEmail);
      expect(await ctx.services.accounts.findByEmail(t.email)).toBeUndefined();
      expect(await pending(t.accountId)).toHaveLength(0);

      const notice = await transport.waitFor(t.email, 'email_changed');
      expect(notice.text).toContain(`now signs in as ${newEmail}`);
      // The session that asked goes on, and shows the new address.
      expect(textOf((await browser.request('GET', '/dashboard/account')).body)).toContain(newEmail);
      await signIn(ctx, newEmail);
      const old = new WebBrowser(ctx);
      await old.request('GET', '/dashboard/login');
      expect((await old.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD, csrf: old.csrf })).status).toBe(401);

      // Single use.
      expect((await elsewhere.request('GET', link)).status).toBe(400);
      expect((await elsewhere.request('POST', '/dashboard/email/confirm', { token: tokenOf(link), csrf })).status).toBe(400);
    });

    it('kills the password-reset links of the old address, and a newer request replaces an older one', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const visitor = new WebBrowser(ctx);
      const resetLink = await askReset(visitor, t.email);

      const first = await ask(browser, freshAddress());
      const secondAddress = freshAddress();
      const second = await ask(browser, secondAddress);
      expect(await pending(t.accountId)).toHaveLength(1);
      expect((await visitor.request('GET', first)).status).toBe(400);

      await visitor.request('GET', second);
      expect((await visitor.request('POST', '/dashboard/email/confirm', { token: tokenOf(second), csrf: visitor.csrf })).status).toBe(200);
      expect((await visitor.request('GET', resetLink)).status).toBe(400);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(secondAddress);
    });
  });

  describe('errors', () => {
    it('refuses a wrong password, a bad or unchanged address and one in use, storing and sending nothing', async () => {
      const t = await createTenant(ctx);
      const other = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', '/dashboard/account');
      const cases: [Record<string, string>, string][] = [
        [{ newEmail: freshAddress(), password: 'not my password' }, 'Your password is not right.'],
        [{ newEmail: 'not an address', password: PASSWORD }, 'New e-mail address must be a valid e-mail address.'],
        [{ newEmail: t.email.toUpperCase(), password: PASSWORD }, 'New e-mail address is already your e-mail address.'],
        [{ newEmail: other.email, password: PASSWORD }, 'New e-mail address already in use.'],
        [{ password: PASSWORD }, 'New e-mail address must be a valid e-mail address.'],
      ];
      const before = transport.sent.length;
      for (const [fields, message] of cases) {
        const res = await browser.request('POST', '/dashboard/account/email', { ...fields, csrf: browser.csrf });
        expect(res.status, message).toBe(400);
        expect(textOf(res.body)).toContain(message);
        // The typed address comes back; the password never does.
        if (fields.newEmail) expect(res.body).toContain(`value="${fields.newEmail}"`);
        expect(res.body).not.toContain(PASSWORD);
      }
      expect(await pending(t.accountId)).toHaveLength(0);
      expect(transport.sent.length).toBe(before);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);
    });

    it('answers a dead, expired or missing link with a clear page, and a taken address with 409', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const visitor = new WebBrowser(ctx);
      for (const url of ['/dashboard/email/confirm', '/dashboard/email/confirm?token=nope', `/dashboard/email/confirm?token=${'x'.repeat(500)}`]) {
        const res = await visitor.request('GET', url);
        expect(res.status, url).toBe(400);
        expect(textOf(res.body)).toContain('Confirmation links work once, for 1 hour.');
      }

      const expired = await ask(browser, freshAddress());
      await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('dashboard_email_changes').set({ expires_at: Date.now() - 1 }).where('account_id', '=', t.accountId)));
      await visitor.request('GET', '/dashboard/forgot'); // a page with a CSRF token for this browser
      const csrf = visitor.csrf;
      expect((await visitor.request('GET', expired)).status).toBe(400);
      expect((await visitor.request('POST', '/dashboard/email/confirm', { token: tokenOf(expired), csrf })).status).toBe(400);

      // Another account takes the address between the request and the confirmation.
      const wanted = freshAddress();
      const link = await ask(browser, wanted);
      await ctx.services.accounts.create({ email: wanted, password: PASSWORD });
      await visitor.request('GET', link);
      const taken = await visitor.request('POST', '/dashboard/email/confirm', { token: tokenOf(link), csrf: visitor.csrf });
      expect(taken.status).toBe(409);
      expect(textOf(taken.body)).toContain('Another account uses this e-mail address now');
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);
      expect(transport.sent.some((m) => m.to === t.email && m.kind === 'email_changed')).toBe(false);
    });
  });

  describe('security', () => {
    it('stores only a hash of the link, and needs the CSRF token on both forms', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', '/dashboard/account');
      const forged = await browser.request('POST', '/dashboard/account/email', { newEmail: freshAddress(), password: PASSWORD });
      expect(forged.status).toBe(403);
      expect(await pending(t.accountId)).toHaveLength(0);

      const newEmail = freshAddress();
      const link = await ask(browser, newEmail);
      const rows = await pending(t.accountId);
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(tokenOf(link));

      const visitor = new WebBrowser(ctx);
      await visitor.request('GET', link);
      const noCsrf = await visitor.request('POST', '/dashboard/email/confirm', { token: tokenOf(link) });
      expect(noCsrf.status).toBe(403);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);
      // A GET never changes the address (mail scanners open links).
      for (let i = 0; i < 2; i++) expect((await visitor.request('GET', link)).status).toBe(200);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);
    });

    it('a password reset cancels the pending e-mail change: an attacker who once knew the password loses the account move', async () => {
      const t = await createTenant(ctx);
      // The attacker, signed in with the old password, asks to move the account to their address.
      const attacker = await signIn(ctx, t.email);
      const stolen = await ask(attacker, freshAddress());
      // The owner resets the password by the e-mailed link.
      const owner = new WebBrowser(ctx);
      const resetLink = await askReset(owner, t.email);
      await owner.request('GET', resetLink);
      const reset = await owner.request('POST', '/dashboard/reset', { token: tokenOf(resetLink), password: 'the owner took it back', csrf: owner.csrf });
      expect(reset.status).toBe(303);
      expect(await pending(t.accountId)).toHaveLength(0);
      // The attacker's confirmation link is dead, on both the page and the form.
      const visitor = new WebBrowser(ctx);
      expect((await visitor.request('GET', stolen)).status).toBe(400);
      await visitor.request('GET', '/dashboard/forgot');
      expect((await visitor.request('POST', '/dashboard/email/confirm', { token: tokenOf(stolen), csrf: visitor.csrf })).status).toBe(400);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);
    });

    it('a password change cancels the pending e-mail change and every reset link of the account', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const moved = await ask(browser, freshAddress());
      const visitor = new WebBrowser(ctx);
      const resetLink = await askReset(visitor, t.email);

      await browser.request('GET', '/dashboard/account');
      const changed = await browser.request('POST', '/dashboard/account/password', { currentPassword: PASSWORD, newPassword: 'a brand new password', csrf: browser.csrf });
      expect(changed.status).toBe(303);
      expect(await pending(t.accountId)).toHaveLength(0);
      expect((await visitor.request('GET', moved)).status).toBe(400);
      expect((await visitor.request('GET', resetLink)).status).toBe(400);
      expect(await ctx.store.read.all(ctx.store.db.selectFrom('dashboard_password_resets').selectAll().where('account_id', '=', t.accountId))).toHaveLength(0);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(t.email);
    });

    it('confirms a link once when it is used twice at the same time', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const newEmail = freshAddress();
      const link = await ask(browser, newEmail);
      const a = new WebBrowser(ctx);
      const b = new WebBrowser(ctx);
      await a.request('GET', link);
      await b.request('GET', link);
      const answers = await Promise.all([a, b].map((x) => x.request('POST', '/dashboard/email/confirm', { token: tokenOf(link), csrf: x.csrf })));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
      expect((await ctx.services.accounts.findById(t.accountId))!.email).toBe(newEmail);
    });

    it('gives an address to one of two accounts confirming it at the same time', async () => {
      const wanted = freshAddress();
      const tenants = [await createTenant(ctx), await createTenant(ctx)];
      const links: string[] = [];
      for (const t of tenants) links.push(await ask(await signIn(ctx, t.email), wanted));
      const visitors = await Promise.all(
        links.map(async (link) => {
          const v = new WebBrowser(ctx);
          await v.request('GET', link);
          return v;
        }),
      );
      const answers = await Promise.all(visitors.map((v, i) => v.request('POST', '/dashboard/email/confirm', { token: tokenOf(links[i]!), csrf: v.csrf })));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
      const emails = await Promise.all(tenants.map(async (t) => (await ctx.services.accounts.findById(t.accountId))!.email));
      expect(emails.filter((e) => e === wanted)).toHaveLength(1);
    });
  });
});

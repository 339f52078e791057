import { describe, expect, it } from 'vitest';
import { createTenant, useTestApp } from '../support/app.ts';
import { PASSWORD, signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { CapturingTransport, waitUntil } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

const resetLinkIn = (text: string) => /http:\/\/[^\s]+\/dashboard\/reset\?token=[A-Za-z0-9_-]+/.exec(text)![0];

forEachStore('dashboard accounts', (kind) => {
  describe('first run', () => {
    const ctx = useTestApp(kind);

    it('shows the setup page until the first account exists, then never again', async () => {
      const browser = new WebBrowser(ctx);
      expect((await browser.request('GET', '/dashboard')).headers.location).toBe('/dashboard/setup');
      expect((await browser.request('GET', '/dashboard/login')).headers.location).toBe('/dashboard/setup');
      await browser.request('GET', '/dashboard/setup');
      expect(browser.lastHtml).toContain('<h1>Set up Tessera</h1>');
      const short = await browser.request('POST', '/dashboard/setup', { email: 'owner@example.com', password: 'short', csrf: browser.csrf });
      expect(short.status).toBe(400);
      expect(textOf(short.body)).toContain('Password must be at least 10 characters.');
      expect(await ctx.services.accounts.count()).toBe(0);
      const done = await browser.request('POST', '/dashboard/setup', { email: 'Owner@Example.com', password: PASSWORD, csrf: browser.csrf });
      expect(done.status).toBe(303);
      expect(done.headers.location).toBe('/dashboard');
      const home = await browser.request('GET', '/dashboard');
      expect(home.status).toBe(200);
      expect(home.body).toContain('<h1>Overview</h1>');
      expect(home.body).toContain('owner@example.com');
      // Setup is closed now: another visitor gets the log-in page, and a POST creates nothing.
      const other = new WebBrowser(ctx);
      expect((await other.request('GET', '/dashboard/setup')).headers.location).toBe('/dashboard/login');
      await other.request('GET', '/dashboard/login');
      expect((await other.request('POST', '/dashboard/setup', { email: 'intruder@example.com', password: PASSWORD, csrf: other.csrf })).headers.location).toBe('/dashboard/login');
      expect(await ctx.services.accounts.count()).toBe(1);
    });
  });

  describe('racing first runs', () => {
    const ctx = useTestApp(kind);

    it('makes one account when several setups race each other', async () => {
      const browsers = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const browser = new WebBrowser(ctx);
          await browser.request('GET', '/dashboard/setup');
          return browser;
        }),
      );
      const answers = await Promise.all(
        browsers.map((b, i) => b.request('POST', '/dashboard/setup', { email: `owner${i}@example.com`, password: PASSWORD, csrf: b.csrf })),
      );
      expect(answers.filter((a) => a.headers.location === '/dashboard')).toHaveLength(1);
      expect(answers.filter((a) => a.headers.location === '/dashboard/login')).toHaveLength(5);
      expect(await ctx.services.accounts.count()).toBe(1);
    });
  });

  describe('sessions and passwords', () => {
    const transport = new CapturingTransport();
    const ctx = useTestApp(kind, { app: { mail: { transport, worker: { pollMs: 20 } } } });

    it('logs in, keeps the session server-side (only a hash stored) and logs out', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const token = browser.cookie('tessera_dashboard')!;
      const rows = await ctx.store.read.all(ctx.store.db.selectFrom('dashboard_sessions').selectAll().where('account_id', '=', t.accountId));
      expect(rows).toHaveLength(1);
      expect(rows[0]!.token_hash).not.toContain(token);
      expect(JSON.stringify(rows)).not.toContain(token);
      await browser.request('GET', '/dashboard');
      const out = await browser.request('POST', '/dashboard/logout', { csrf: browser.csrf });
      expect(out.headers.location).toBe('/dashboard/login?notice=signed-out');
      expect(await ctx.store.read.all(ctx.store.db.selectFrom('dashboard_sessions').selectAll().where('account_id', '=', t.accountId))).toHaveLength(0);
      // The old cookie is worth nothing now.
      const replay = await ctx.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: `tessera_dashboard=${token}` } });
      expect(replay.statusCode).toBe(303);
      expect(replay.headers.location).toContain('/dashboard/login');
    });

    it('returns to the page asked for after log-in, never to another site', async () => {
      const t = await createTenant(ctx);
      const browser = new WebBrowser(ctx);
      const first = await browser.request('GET', '/dashboard/licenses?status=active');
      expect(first.headers.location).toBe(`/dashboard/login?next=${encodeURIComponent('/dashboard/licenses?status=active')}`);
      await browser.request('GET', first.headers.location as string);
      const res = await browser.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD, next: '/dashboard/licenses?status=active', csrf: browser.csrf });
      expect(res.headers.location).toBe('/dashboard/licenses?status=active');
      const evil = await signIn(ctx, t.email);
      await evil.request('POST', '/dashboard/logout', { csrf: evil.csrf });
      await evil.request('GET', '/dashboard/login');
      const away = await evil.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD, next: '//evil.example/x', csrf: evil.csrf });
      expect(away.headers.location).toBe('/dashboard');
    });

    it('ends idle sessions after 7 days', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email);
      const eightDaysAgo = Date.now() - 8 * 24 * 3600_000;
      await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('dashboard_sessions').set({ last_seen_at: eightDaysAgo }).where('account_id', '=', t.accountId)));
      const res = await browser.request('GET', '/dashboard/products');
      expect(res.status).toBe(303);
      expect(res.headers.location).toContain('notice=session-ended');
    });

    it('changes the password and ends every other session', async () => {
      const t = await createTenant(ctx);
      const laptop = await signIn(ctx, t.email);
      const phone = await signIn(ctx, t.email);
      await laptop.request('GET', '/dashboard/account');
      const wrong = await laptop.request('POST', '/dashboard/account/password', { currentPassword: 'not my password', newPassword: 'a brand new password', csrf: laptop.csrf });
      expect(wrong.status).toBe(400);
      expect(textOf(wrong.body)).toContain('Current password is not your current password.');
      const tooShort = await laptop.request('POST', '/dashboard/account/password', { currentPassword: PASSWORD, newPassword: 'short', csrf: laptop.csrf });
      expect(tooShort.status).toBe(400);
      expect(textOf(tooShort.body)).toContain('New password must be at least 10 characters.');
      const ok = await laptop.request('POST', '/dashboard/account/password', { currentPassword: PASSWORD, newPassword: 'a brand new password', csrf: laptop.csrf });
      expect(ok.status).toBe(303);
      expect((await laptop.request('GET', ok.headers.location as string)).body).toContain('Password changed.');
      expect((await phone.request('GET', '/dashboard/account')).status).toBe(303);
      expect(await ctx.services.accounts.verifyPassword(t.email, 'a brand new password')).toBeDefined();
      expect(await ctx.services.accounts.verifyPassword(t.email, PASSWORD)).toBeUndefined();
    });

    it('resets a password through a single-use e-mailed link and ends every session', async () => {
      const t = await createTenant(ctx);
      const signedIn = await signIn(ctx, t.email);
      const browser = new WebBrowser(ctx);
      await browser.request('GET', '/dashboard/forgot');
      const asked = await browser.request('POST', '/dashboard/forgot', { email: t.email.toUpperCase(), csrf: browser.csrf });
      expect(asked.status).toBe(200);
      expect(textOf(asked.body)).toContain('a link to reset its password is on its way');
      const mail = await transport.waitFor(t.email, 'password_reset');
      const link = resetLinkIn(mail.text);
      expect(mail.html).toContain(link);
      const form = await browser.request('GET', link);
      expect(form.status).toBe(200);
      expect(form.body).toContain('<h1>Choose a new password</h1>');
      const token = new URL(link).searchParams.get('token')!;
      const csrf = browser.csrf;
      const short = await browser.request('POST', '/dashboard/reset', { token, password: 'short', csrf });
      expect(short.status).toBe(400);
      const done = await browser.request('POST', '/dashboard/reset', { token, password: 'reset to this password', csrf });
      expect(done.headers.location).toBe('/dashboard/login?notice=password-reset');
      expect((await signedIn.request('GET', '/dashboard')).status).toBe(303);
      expect(await ctx.services.accounts.verifyPassword(t.email, 'reset to this password')).toBeDefined();
      // Single use.
      expect((await browser.request('GET', link)).status).toBe(400);
      expect((await browser.request('POST', '/dashboard/reset', { token, password: 'and once more please', csrf })).status).toBe(400);
      expect(await ctx.services.accounts.verifyPassword(t.email, 'reset to this password')).toBeDefined();
    });

    it('gives a reset link 1 hour, and answers an unknown address exactly like a known one', async () => {
      const t = await createTenant(ctx);
      const browser = new WebBrowser(ctx);
      await browser.request('GET', '/dashboard/forgot');
      const known = await browser.request('POST', '/dashboard/forgot', { email: t.email, csrf: browser.csrf });
      const unknown = await browser.request('POST', '/dashboard/forgot', { email: 'nobody@example.com', csrf: browser.csrf });
      expect(unknown.status).toBe(known.status);
      expect(textOf(unknown.body).replace('nobody@example.com', 'X')).toBe(textOf(known.body).replace(t.email, 'X').replace(/value="[^"]+"/g, ''));
      const mail = await transport.waitFor(t.email, 'password_reset');
      await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('dashboard_password_resets').set({ expires_at: Date.now() - 1 }).where('account_id', '=', t.accountId)));
      expect((await browser.request('GET', resetLinkIn(mail.text))).status).toBe(400);
      await waitUntil(() => transport.sent.length > 0);
      expect(transport.sent.some((m) => m.to === 'nobody@example.com')).toBe(false);
    });
  });

  describe('sign-up', () => {
    const closed = useTestApp(kind);
    const open = useTestApp(kind, { env: { SIGNUP: 'open' } });

    it('is closed by default and open with SIGNUP=open', async () => {
      await createTenant(closed);
      const browser = new WebBrowser(closed);
      expect((await browser.request('GET', '/dashboard/signup')).headers.location).toBe('/dashboard/login');
      await createTenant(open);
      const visitor = new WebBrowser(open);
      await visitor.request('GET', '/dashboard/signup');
      expect(visitor.lastHtml).toContain('<h1>Create an account</h1>');
      const res = await visitor.request('POST', '/dashboard/signup', { email: 'new-operator@example.com', password: PASSWORD, csrf: visitor.csrf });
      expect(res.headers.location).toBe('/dashboard');
      expect(await open.services.accounts.findByEmail('new-operator@example.com')).toBeDefined();
      const again = new WebBrowser(open);
      await again.request('GET', '/dashboard/signup');
      const taken = await again.request('POST', '/dashboard/signup', { email: 'new-operator@example.com', password: PASSWORD, csrf: again.csrf });
      expect(taken.status).toBe(400);
    });

    it('makes one account of two sign-ups with one address at the same time; the other is told it is in use', async () => {
      await createTenant(open);
      const visitors = [new WebBrowser(open), new WebBrowser(open)];
      for (const v of visitors) await v.request('GET', '/dashboard/signup');
      const answers = await Promise.all(visitors.map((v) => v.request('POST', '/dashboard/signup', { email: 'twice@example.com', password: PASSWORD, csrf: v.csrf })));
      expect(answers.map((r) => r.status).sort()).toEqual([303, 400]);
      expect(textOf(answers.find((r) => r.status === 400)!.body)).toContain('E-mail address already in use.');
      const rows = await open.store.read.all(open.store.db.selectFrom('accounts').select('id').where('email', '=', 'twice@example.com'));
      expect(rows).toHaveLength(1);
    });
  });
});

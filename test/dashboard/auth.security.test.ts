import { describe, expect, it } from 'vitest';
import { createTenant, useTestApp } from '../support/app.ts';
import { PASSWORD, signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { forEachStore } from '../support/stores.ts';

const SCREENS = ['/dashboard', '/dashboard/products', '/dashboard/products/new', '/dashboard/licenses', '/dashboard/licenses/new', '/dashboard/licenses/export.csv', '/dashboard/api-keys', '/dashboard/portal', '/dashboard/activity', '/dashboard/account'];

forEachStore('dashboard sign-in security', (kind) => {
  describe('without limits', () => {
    const ctx = useTestApp(kind);

    it('sends a logged-out visitor of every screen, and every form post, to the log-in page', async () => {
      await createTenant(ctx);
      const browser = new WebBrowser(ctx);
      for (const url of SCREENS) {
        const res = await browser.request('GET', url);
        expect(res.status, url).toBe(303);
        expect(res.headers.location, url).toMatch(/^\/dashboard\/login/);
      }
      const post = await browser.request('POST', '/dashboard/products/new', { name: 'Sneaky' });
      expect(post.headers.location).toBe('/dashboard/login');
      expect(await ctx.store.read.all(ctx.store.db.selectFrom('products').selectAll().where('name', '=', 'Sneaky'))).toEqual([]);
    });

    it('answers a wrong password and an unknown address with the same page', async () => {
      const t = await createTenant(ctx);
      const browser = new WebBrowser(ctx);
      await browser.request('GET', '/dashboard/login');
      const wrong = await browser.request('POST', '/dashboard/login', { email: t.email, password: 'not the password', csrf: browser.csrf });
      const unknown = await browser.request('POST', '/dashboard/login', { email: 'nobody-here@example.com', password: 'not the password', csrf: browser.csrf });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      const normalize = (body: string, email: string) => textOf(body).replace(email, 'E').replace(/value="[^"]*"/g, '');
      expect(normalize(unknown.body, 'nobody-here@example.com')).toBe(normalize(wrong.body, t.email));
      expect(textOf(wrong.body)).toContain('The e-mail address or the password is not right.');
      expect(wrong.headers['set-cookie']?.toString() ?? '').not.toContain('tessera_dashboard=');
    });

    it('refuses log-in, log-out and password forms without the CSRF token, or with one of another session', async () => {
      const t = await createTenant(ctx);
      const browser = new WebBrowser(ctx);
      await browser.request('GET', '/dashboard/login');
      expect((await browser.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD })).status).toBe(403);
      expect((await browser.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD, csrf: 'A'.repeat(43) })).status).toBe(403);
      expect(browser.cookie('tessera_dashboard')).toBeUndefined();

      const mine = await signIn(ctx, t.email);
      const other = await signIn(ctx, (await createTenant(ctx)).email);
      // The other session's token (another binding) is no token for this session.
      const res = await mine.request('POST', '/dashboard/account/password', { currentPassword: PASSWORD, newPassword: 'attacker chosen password', csrf: other.csrf });
      expect(res.status).toBe(403);
      expect(res.body).toContain('This form has expired');
      expect((await mine.request('POST', '/dashboard/logout', {})).status).toBe(403);
      expect((await mine.request('GET', '/dashboard/account')).status).toBe(200);
      expect(await ctx.services.accounts.verifyPassword(t.email, PASSWORD)).toBeDefined();
      // A token minted before sign-in (no binding) is not accepted after it either.
      const fresh = new WebBrowser(ctx);
      await fresh.request('GET', '/dashboard/login');
      const unbound = fresh.csrf;
      await fresh.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD, csrf: unbound });
      expect((await fresh.request('POST', '/dashboard/products/new', { name: 'Unbound', csrf: unbound })).status).toBe(403);
    });

    it('sends security headers and HttpOnly, SameSite cookies scoped to /dashboard', async () => {
      const t = await createTenant(ctx);
      const browser = new WebBrowser(ctx);
      const page = await browser.request('GET', '/dashboard/login');
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.headers['cache-control']).toBe('no-store');
      const res = await browser.request('POST', '/dashboard/login', { email: t.email, password: PASSWORD, csrf: browser.csrf });
      const cookie = res.headers['set-cookie']!.toString();
      expect(cookie).toMatch(/tessera_dashboard=[A-Za-z0-9_-]{43}; Path=\/dashboard; HttpOnly; SameSite=Lax/);
    });
  });

  describe('rate limits', () => {
    const ctx = useTestApp(kind, {
      env: { RATE_LIMIT: 'on', RATE_LIMIT_DASHBOARD_LOGINS_PER_ADDRESS: '3', RATE_LIMIT_DASHBOARD_LOGINS_ALL_CLIENTS_PER_ADDRESS: '8', RATE_LIMIT_DASHBOARD_LOGINS_PER_CLIENT: '5' },
    });
    const attempt = async (client: string, email: string, password: string) => {
      const b = new WebBrowser(ctx, client);
      await b.request('GET', '/dashboard/login');
      return b.request('POST', '/dashboard/login', { email, password, csrf: b.csrf });
    };

    it('a stranger spends their own quota for an address: the owner, from another client, still logs in', async () => {
      const t = await createTenant(ctx);
      // A stranger tries 3 wrong passwords for the operator's address: the 4th attempt from that client is refused, even a right one.
      for (let i = 0; i < 3; i++) expect((await attempt('10.0.0.1', t.email, 'wrong password!')).status).toBe(401);
      const limited = await attempt('10.0.0.1', t.email.toUpperCase(), PASSWORD);
      expect(limited.status).toBe(429);
      expect(limited.body).toContain('Too many requests');
      expect(limited.headers['set-cookie']?.toString() ?? '').not.toContain('tessera_dashboard=');
      // The operator, from their own client, is not locked out.
      const owner = await attempt('10.0.0.2', t.email, PASSWORD);
      expect(owner.status).toBe(303);
      expect(owner.headers['set-cookie']?.toString()).toContain('tessera_dashboard=');
    });

    it('limits attempts per address from all clients together (a higher cap), and per client across addresses', async () => {
      const t = await createTenant(ctx);
      // 8 attempts from 4 clients, 2 each, reach the all-clients cap: the 9th, from a fifth client, is refused.
      for (let i = 0; i < 8; i++) expect((await attempt(`10.0.3.${i % 4}`, t.email, 'wrong password!')).status).toBe(401);
      expect((await attempt('10.0.3.9', t.email, PASSWORD)).status).toBe(429);
      // Per client: one address tries 5 different e-mails; the 6th attempt from it is refused.
      for (let i = 0; i < 5; i++) expect((await attempt('10.0.1.1', `guess${i}@example.com`, 'wrong password!')).status).toBe(401);
      expect((await attempt('10.0.1.1', 'guess9@example.com', 'wrong password!')).status).toBe(429);
    });

    it('counts password-reset requests the same way: a stranger cannot stop the owner asking for a link', async () => {
      const t = await createTenant(ctx);
      const ask = async (client: string) => {
        const b = new WebBrowser(ctx, client);
        await b.request('GET', '/dashboard/forgot');
        return b.request('POST', '/dashboard/forgot', { email: t.email, csrf: b.csrf });
      };
      for (let i = 0; i < 3; i++) expect((await ask('10.0.4.1')).status).toBe(200);
      expect((await ask('10.0.4.1')).status).toBe(429);
      expect((await ask('10.0.4.2')).status).toBe(200);
    });

    it('limits password attempts on the account page per account, across its forms', async () => {
      const t = await createTenant(ctx);
      const browser = await signIn(ctx, t.email, PASSWORD, '10.0.2.1');
      await browser.request('GET', '/dashboard/account');
      const csrf = browser.csrf;
      expect((await browser.request('POST', '/dashboard/account/password', { currentPassword: 'wrong password!', newPassword: 'a brand new password', csrf })).status).toBe(400);
      expect((await browser.request('POST', '/dashboard/account/email', { newEmail: 'elsewhere@example.com', password: 'wrong password!', csrf })).status).toBe(400);
      expect((await browser.request('POST', '/dashboard/account/password', { currentPassword: 'wrong password!', newPassword: 'a brand new password', csrf })).status).toBe(400);
      // The 4th attempt of this account is refused, even with the right password, on either form.
      const limited = await browser.request('POST', '/dashboard/account/email', { newEmail: 'elsewhere@example.com', password: PASSWORD, csrf });
      expect(limited.status).toBe(429);
      expect(limited.body).toContain('Too many requests');
      expect((await browser.request('POST', '/dashboard/account/password', { currentPassword: PASSWORD, newPassword: 'a brand new password', csrf })).status).toBe(429);
      expect(await ctx.store.read.all(ctx.store.db.selectFrom('dashboard_email_changes').selectAll().where('account_id', '=', t.accountId))).toHaveLength(0);
      expect(await ctx.services.accounts.verifyPassword(t.email, PASSWORD)).toBeDefined();
      // Another account is counted on its own.
      const other = await createTenant(ctx);
      const second = await signIn(ctx, other.email, PASSWORD, '10.0.2.2');
      await second.request('GET', '/dashboard/account');
      expect((await second.request('POST', '/dashboard/account/password', { currentPassword: 'wrong password!', newPassword: 'a brand new password', csrf: second.csrf })).status).toBe(400);
    });
  });
});

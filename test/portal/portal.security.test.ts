import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { activateDevice as activate, CapturingTransport, openPrivateSession, PortalBrowser, portalLinkIn, outboxFor } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';


forEachStore('portal security', (kind) => {
  describe('forms and sessions', () => {
    const transport = new CapturingTransport();
    const ctx = useTestApp(kind, { app: { mail: { transport } } });

    const signedIn = (auth: Record<string, string>, email: string) => openPrivateSession(ctx, auth, email);

    it('refuses a link request without a valid CSRF token and e-mails nothing', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'csrf@example.com' });
      const browser = new PortalBrowser(ctx);
      await browser.request('GET', '/portal/request');
      const noToken = await browser.request('POST', '/portal/request', { email: 'csrf@example.com' });
      expect(noToken.status).toBe(403);
      expect(noToken.body).toContain('This form has expired');
      const forged = await browser.request('POST', '/portal/request', { email: 'csrf@example.com', csrf: 'A'.repeat(43) });
      expect(forged.status).toBe(403);
      // A token minted for another browser does not fit this browser's cookie.
      const other = new PortalBrowser(ctx);
      await other.request('GET', '/portal/request');
      expect((await browser.request('POST', '/portal/request', { email: 'csrf@example.com', csrf: other.csrf })).status).toBe(403);
      // No cookie at all (a cross-site form post from a fresh browser).
      const bare = await ctx.app.inject({ method: 'POST', url: '/portal/request', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `email=csrf%40example.com&csrf=${other.csrf}` });
      expect(bare.statusCode).toBe(403);
      expect(await outboxFor(ctx.store, 'csrf@example.com')).toEqual([]);
    });

    it('refuses a device reset and a sign-out without the CSRF token', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const license = await createLicense(ctx, t, product.id, { email: 'csrf-reset@example.com' });
      await activate(ctx, t.auth, license.key, product.id, 'stays');
      const { browser } = await signedIn(t.auth, 'csrf-reset@example.com');
      expect((await browser.request('POST', '/portal/licenses/reset', { key: license.key })).status).toBe(403);
      expect((await browser.request('POST', '/portal/licenses/reset', { key: license.key, csrf: 'x' })).status).toBe(403);
      expect((await browser.request('POST', '/portal/logout', {})).status).toBe(403);
      const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } });
      expect(stored.body.activeDevices).toHaveLength(1);
      expect((await browser.request('GET', '/portal')).status).toBe(200);
    });

    it("keeps a private session to the calling account: another account's license can be neither seen nor reset", async () => {
      const mine = await createTenant(ctx);
      const theirs = await createTenant(ctx);
      const theirProduct = await createProduct(ctx, theirs, { name: 'Their Product' });
      const theirLicense = await createLicense(ctx, theirs, theirProduct.id, { email: 'both@example.com' });
      await activate(ctx, theirs.auth, theirLicense.key, theirProduct.id, 'their-device');
      await createLicense(ctx, mine, (await createProduct(ctx, mine, { name: 'My Product' })).id, { email: 'both@example.com' });
      const { browser } = await signedIn(mine.auth, 'both@example.com');
      expect(browser.lastHtml).toContain('My Product');
      expect(browser.lastHtml).not.toContain('Their Product');
      expect(browser.lastHtml).not.toContain(theirLicense.key);
      const res = await browser.request('POST', '/portal/licenses/reset', { key: theirLicense.key, csrf: browser.csrf });
      expect(res.status).toBe(404);
      const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...theirs.auth, 'license-key': theirLicense.key } });
      expect(stored.body.activeDevices).toHaveLength(1);
    });

    it("cannot reset a license of another address, even knowing its key", async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const victim = await createLicense(ctx, t, product.id, { email: 'victim@example.com' });
      await activate(ctx, t.auth, victim.key, product.id, 'victim-pc');
      await createLicense(ctx, t, product.id, { email: 'attacker@example.com' });
      const { browser } = await signedIn(t.auth, 'attacker@example.com');
      expect((await browser.request('POST', '/portal/licenses/reset', { key: victim.key, csrf: browser.csrf })).status).toBe(404);
      const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': victim.key } });
      expect(stored.body.activeDevices).toHaveLength(1);
    });

    it('stores tokens only as hashes', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'hashed@example.com' });
      const { browser, url } = await signedIn(t.auth, 'hashed@example.com');
      const linkToken = new URL(url).searchParams.get('token')!;
      const sessionToken = browser.cookie('tessera_portal')!;
      const rows = await ctx.store.read.all(ctx.store.db.selectFrom('portal_tokens').selectAll().where('email_normalized', '=', 'hashed@example.com'));
      const sha = (v: string) => createHash('sha256').update(v).digest('hex');
      expect(rows.map((r) => r.token_hash).sort()).toEqual([sha(linkToken), sha(sessionToken)].sort());
      expect(JSON.stringify(rows)).not.toContain(linkToken);
      expect(JSON.stringify(rows)).not.toContain(sessionToken);
    });

    it('escapes every operator-written value on the page and in e-mails', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t, {
        name: '<script>alert(1)</script>',
        purchaseNote: '<img src=x onerror=alert(2)>',
        actionButtonText: '"><b>x</b>',
        actionButtonUrl: 'https://vendor.test/?a="onmouseover=alert(3)&k={key}',
      });
      const license = await createLicense(ctx, t, product.id, { email: 'xss@example.com', sendEmail: true });
      const { browser } = await signedIn(t.auth, 'xss@example.com');
      for (const html of [browser.lastHtml, (await transport.waitFor('xss@example.com', 'purchase')).html]) {
        expect(html).not.toContain('<script>alert(1)');
        expect(html).not.toContain('<img src=x');
        expect(html).not.toContain('<b>x</b>');
        expect(html).not.toContain('"onmouseover');
        expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
        expect(html).toContain(license.key);
      }
    });

    it('shows only its own notices, whatever the query asks for', async () => {
      for (const notice of ['__proto__', 'constructor', 'toString', '<script>']) {
        const res = await call(ctx, { method: 'GET', url: `/portal/request?notice=${encodeURIComponent(notice)}` });
        expect(res.status).toBe(200);
        expect(res.body).not.toContain('class="notice');
      }
      expect((await call(ctx, { method: 'GET', url: '/portal/request?notice=signed-out' })).body).toContain('You are signed out.');
    });

    it('takes the token out of the address bar and sets no cookie without a valid link', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'redirect@example.com' });
      await new PortalBrowser(ctx).requestLink('redirect@example.com');
      const link = portalLinkIn(await transport.waitFor('redirect@example.com', 'portal_link'));
      const res = await ctx.app.inject({ method: 'GET', url: link.replace(ctx.config.baseUrl, '') });
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe('/portal');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    });
  });

  describe('secure cookies behind https', () => {
    const ctx = useTestApp(kind, { env: { BASE_URL: 'https://licenses.example.com' }, app: { mail: { transport: new CapturingTransport() } } });

    it('marks the session and CSRF cookies Secure', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'secure@example.com' });
      const { url } = (await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: t.auth, json: { email: 'secure@example.com' } })).body;
      expect(url.startsWith('https://licenses.example.com/portal?token=')).toBe(true);
      const opened = await ctx.app.inject({ method: 'GET', url: url.replace('https://licenses.example.com', '') });
      expect(String(opened.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
      const form = await ctx.app.inject({ method: 'GET', url: '/portal/request' });
      expect(String(form.headers['set-cookie'])).toMatch(/^tessera_csrf=[^;]+; Path=\/portal; HttpOnly; SameSite=Lax; Secure$/);
    });
  });

  describe('rate limits', () => {
    const transport = new CapturingTransport();
    const ctx = useTestApp(kind, { env: { RATE_LIMIT: 'on', RATE_LIMIT_PORTAL_LINKS_PER_CLIENT_PER_HOUR: '12' }, app: { mail: { transport } } });

    it('limits link requests per address and client (with or without licenses) and answers 429 with Retry-After', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'flood@example.com' });
      for (const address of ['flood@example.com', 'nobody@example.com']) {
        const statuses: number[] = [];
        let last;
        for (let i = 0; i < 6; i++) {
          last = await new PortalBrowser(ctx).requestLink(address.toUpperCase());
          statuses.push(last.status);
        }
        expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
        expect(Number(last!.headers['retry-after'])).toBeGreaterThan(3500);
        expect(Number(last!.headers['retry-after'])).toBeLessThanOrEqual(3600);
        // The headers of the limit that refused: 5 per address and client, none left, reset with Retry-After.
        expect([last!.headers['ratelimit-limit'], last!.headers['ratelimit-remaining'], last!.headers['ratelimit-reset']]).toEqual(['5', '0', last!.headers['retry-after']]);
        expect(last!.body).toContain('You have requested too many links for this address');
      }
      expect((await outboxFor(ctx.store, 'flood@example.com')).length).toBe(5);
    });

    it('limits link requests per client address', async () => {
      // The previous case spent the default client's 12 requests: this one comes from another address.
      const from = (ip: string) => ({ remoteAddress: ip });
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 13; i++) {
        const form = await ctx.app.inject({ method: 'GET', url: '/portal/request', ...from('10.9.9.9') });
        const csrfCookie = String(form.headers['set-cookie']).split(';')[0]!;
        const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
        last = await ctx.app.inject({
          method: 'POST',
          url: '/portal/request',
          ...from('10.9.9.9'),
          headers: { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
          payload: `email=client${i}%40example.com&csrf=${csrf}`,
        });
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([...Array(12).fill(200), 429]);
      // The hourly per-client window began with this test's first request.
      expect(Number(last!.headers['retry-after'])).toBeGreaterThan(3500);
      expect(Number(last!.headers['retry-after'])).toBeLessThanOrEqual(3600);
      expect(last!.headers['content-type']).toMatch(/^text\/html/);
      expect(last!.body).toContain('Too many requests');
    });
  });
});

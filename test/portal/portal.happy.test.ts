import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { activateDevice as activate, CapturingTransport, PortalBrowser, portalLinkIn } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';


forEachStore('portal pages', (kind) => {
  const transport = new CapturingTransport();
  const ctx = useTestApp(kind, { app: { mail: { transport } } });

  it('pre-fills the request form from ?email= (escaped)', async () => {
    const res = await call(ctx, { method: 'GET', url: '/portal/request?email=%22ann%40example.com' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('value="&quot;ann@example.com"');
    expect(res.body).toMatch(/<label for="email">/);
  });

  it('e-mails a link that opens every portal license of the address, case-insensitively', async () => {
    const t = await createTenant(ctx);
    const shown = await createProduct(ctx, t, { name: 'Editor Pro', purchaseNote: 'Thanks for buying!', actionButtonText: 'Download', actionButtonUrl: 'https://vendor.test/dl?k={key}' });
    const second = await createProduct(ctx, t, { name: 'Viewer', supportEmail: 'help@vendor.test' });
    const hidden = await createProduct(ctx, t, { name: 'Secret Beta', portalShow: false });
    const a = await createLicense(ctx, t, shown.id, { email: 'Ann.Case@Example.com' });
    const b = await createLicense(ctx, t, second.id, { email: 'ann.case@example.com', type: 'timed', expiresAt: '2099-01-01' });
    const c = await createLicense(ctx, t, hidden.id, { email: 'ann.case@example.com' });
    const other = await createLicense(ctx, t, shown.id, { email: 'bob@example.com' });
    await activate(ctx, t.auth, a.key, shown.id, 'device-1');

    const browser = new PortalBrowser(ctx);
    const sent = await browser.requestLink('ANN.case@example.COM');
    expect(sent.status).toBe(200);
    expect(sent.body).toContain('a link to your portal is on its way');
    // Delivered to the normalized address, the one the lookup used (issue 14, item 7).
    const mail = await transport.waitFor('ann.case@example.com', 'portal_link');
    expect(mail.subject).toBe('Your license portal link');
    expect(mail.html).toContain('2 hours');
    const link = portalLinkIn(mail);
    expect(link.startsWith(`${ctx.config.baseUrl}/portal?token=`)).toBe(true);

    const opened = await browser.request('GET', link);
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/portal');
    const setCookie = String(opened.headers['set-cookie']);
    expect(setCookie).toMatch(/^tessera_portal=[A-Za-z0-9_-]{43}; Path=\/portal; HttpOnly; SameSite=Lax; Max-Age=\d+/);
    const page = await browser.request('GET', '/portal');
    expect(page.status).toBe(200);
    for (const shownText of ['Editor Pro', 'Viewer', a.key, b.key, 'Thanks for buying!', 'Laptop device-1', 'device-1', 'help@vendor.test', t.email]) {
      expect(page.body).toContain(shownText);
    }
    expect(page.body).toContain(`href="https://vendor.test/dl?k=${a.key}"`);
    expect(page.body).toContain('Valid until');
    expect(page.body).toContain('Active');
    expect(page.body).not.toContain(c.key);
    expect(page.body).not.toContain('Secret Beta');
    expect(page.body).not.toContain(other.key);
    // The copy button is progressive enhancement: present, hidden until the script shows it.
    expect(page.body).toContain(`data-copy="${a.key}" hidden`);
  });

  it('resets devices from the portal and counts the reset against the limit', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t, { name: 'Resettable' });
    const license = await createLicense(ctx, t, product.id, { email: 'reset.me@example.com' });
    await activate(ctx, t.auth, license.key, product.id, 'pc-1');
    await activate(ctx, t.auth, license.key, product.id, 'pc-2');

    const { url } = (await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: t.auth, json: { email: 'reset.me@example.com' } })).body;
    const browser = new PortalBrowser(ctx);
    const page = await browser.open(url);
    expect(page.body).toContain('3 of 3 resets left in 30 days');

    const asked = await browser.request('POST', '/portal/licenses/reset', { key: license.key, csrf: browser.csrf });
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('<h1>Reset the devices of Resettable?</h1>');
    expect(asked.body).toContain('All 2 devices using this license are signed out');
    expect(asked.body).toContain('It uses one of your 3 resets left');
    expect(asked.body).toContain('name="confirm" value="yes"');
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } })).body.activeDevices).toHaveLength(2);
    const reset = await browser.request('POST', '/portal/licenses/reset', { key: license.key, confirm: 'yes', csrf: browser.csrf });
    expect(reset.status).toBe(303);
    expect(reset.headers.location).toBe(`/portal?notice=reset#license-${license.key}`);
    const after = await browser.request('GET', reset.headers.location as string);
    expect(after.body).toContain('Devices reset.');
    expect(after.body).toContain('No device is using this license yet.');
    const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } });
    expect(stored.body.activeDevices).toEqual([]);

    await activate(ctx, t.auth, license.key, product.id, 'pc-3');
    const again = await browser.request('GET', '/portal');
    expect(again.body).toContain('2 of 3 resets left in 30 days');
  });

  it('removes one device where resets are allowed, after asking, and counts it as a reset', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t, { name: 'One by one', portalDeviceResetLimit: 2 });
    const license = await createLicense(ctx, t, product.id, { email: 'one.device@example.com' });
    await activate(ctx, t.auth, license.key, product.id, 'old-laptop');
    await activate(ctx, t.auth, license.key, product.id, 'desk');
    const { url } = (await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: t.auth, json: { email: 'one.device@example.com' } })).body;
    const browser = new PortalBrowser(ctx);
    const page = await browser.open(url);
    expect(page.body).toContain('name="device" value="old-laptop"');
    const devices = async () => (await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } })).body.activeDevices.map((d: { identifier: string }) => d.identifier);

    const asked = await browser.request('POST', '/portal/licenses/reset', { key: license.key, device: 'old-laptop', csrf: browser.csrf });
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('(old-laptop) is signed out of this license');
    expect(asked.body).toContain('It uses one of your 2 resets left');
    expect(await devices()).toHaveLength(2);
    const removed = await browser.request('POST', '/portal/licenses/reset', { key: license.key, device: 'old-laptop', confirm: 'yes', csrf: browser.csrf });
    expect(removed.status).toBe(303);
    expect(removed.headers.location).toBe(`/portal?notice=device-removed#license-${license.key}`);
    expect(await devices()).toEqual(['desk']);
    const after = await browser.request('GET', removed.headers.location as string);
    expect(after.body).toContain('Device removed.');
    expect(after.body).toContain('1 of 2 resets left in 30 days');

    // An unknown device is not asked about and changes nothing; the quota is untouched.
    expect((await browser.request('POST', '/portal/licenses/reset', { key: license.key, device: 'ghost', csrf: browser.csrf })).status).toBe(404);
    await browser.request('GET', '/portal');
    const ghost = await browser.request('POST', '/portal/licenses/reset', { key: license.key, device: 'ghost', confirm: 'yes', csrf: browser.csrf });
    expect(ghost.headers.location).toBe('/portal?notice=no-devices');
    expect(await devices()).toEqual(['desk']);
    expect((await browser.request('GET', '/portal')).body).toContain('1 of 2 resets left in 30 days');

    // The last reset used, no device can be removed either.
    await browser.request('POST', '/portal/licenses/reset', { key: license.key, device: 'desk', confirm: 'yes', csrf: browser.csrf });
    await activate(ctx, t.auth, license.key, product.id, 'new-laptop');
    const spent = await browser.request('GET', '/portal');
    expect(spent.body).not.toContain('name="device"');
    expect((await browser.request('POST', '/portal/licenses/reset', { key: license.key, device: 'new-laptop', confirm: 'yes', csrf: browser.csrf })).status).toBe(429);
    expect(await devices()).toEqual(['new-laptop']);
  });

  it('opens a private session showing only the calling account products, for 12 hours', async () => {
    const mine = await createTenant(ctx);
    const theirs = await createTenant(ctx);
    const myProduct = await createProduct(ctx, mine, { name: 'Mine Studio' });
    const theirProduct = await createProduct(ctx, theirs, { name: 'Theirs Suite' });
    const myLicense = await createLicense(ctx, mine, myProduct.id, { email: 'shared@example.com' });
    const theirLicense = await createLicense(ctx, theirs, theirProduct.id, { email: 'shared@example.com' });

    const before = Date.now();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: mine.auth, json: { email: 'Shared@Example.com' } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['expiresAt', 'url']);
    expect(res.body.url).toMatch(new RegExp(`^${ctx.config.baseUrl}/portal\\?token=[A-Za-z0-9_-]{43}$`));
    const expiresAt = Date.parse(res.body.expiresAt);
    expect(res.body.expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(expiresAt - before).toBeGreaterThanOrEqual(12 * 3600_000 - 1000);
    expect(expiresAt - before).toBeLessThanOrEqual(12 * 3600_000 + 5000);

    const page = await new PortalBrowser(ctx).open(res.body.url);
    expect(page.status).toBe(200);
    expect(page.body).toContain(myLicense.key);
    expect(page.body).not.toContain(theirLicense.key);
    expect(page.body).not.toContain('Theirs Suite');

    // The e-mailed link (no account scope) shows both.
    await new PortalBrowser(ctx).requestLink('shared@example.com');
    const everyAccount = await new PortalBrowser(ctx).open(portalLinkIn(await transport.waitFor('shared@example.com', 'portal_link')));
    expect(everyAccount.body).toContain(myLicense.key);
    expect(everyAccount.body).toContain(theirLicense.key);
  });

  it('signs out: the session cookie goes and the session no longer opens the portal', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    await createLicense(ctx, t, product.id, { email: 'leaver@example.com' });
    const { url } = (await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: t.auth, json: { email: 'leaver@example.com' } })).body;
    const browser = new PortalBrowser(ctx);
    await browser.open(url);
    const session = browser.cookie('tessera_portal')!;
    const out = await browser.request('POST', '/portal/logout', { csrf: browser.csrf });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/portal/request?notice=signed-out');
    expect(browser.cookie('tessera_portal')).toBeUndefined();
    const reused = await ctx.app.inject({ method: 'GET', url: '/portal', headers: { cookie: `tessera_portal=${session}` } });
    expect(reused.statusCode).toBe(303);
    expect(reused.headers.location).toBe('/portal/request?notice=session-ended');
  });

  it('serves its stylesheet and script with caching, and pages with security headers', async () => {
    const css = await call(ctx, { method: 'GET', url: '/portal/assets/portal.css' });
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.headers['cache-control']).toBe('public, max-age=3600');
    const js = await call(ctx, { method: 'GET', url: '/portal/assets/portal.js' });
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    const page = await call(ctx, { method: 'GET', url: '/portal/request' });
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
  });
});

import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { activateDevice as activate, CapturingTransport, openPrivateSession, PortalBrowser, outboxFor } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';


forEachStore('portal errors', (kind) => {
  const transport = new CapturingTransport();
  const ctx = useTestApp(kind, { app: { mail: { transport } } });

  const privateSession = async (auth: Record<string, string>, email: string) => (await openPrivateSession(ctx, auth, email)).browser;

  async function outboxCount(to: string) {
    return (await outboxFor(ctx.store, to)).length;
  }

  it('answers an unknown link with a clear page and a way to ask for a new one', async () => {
    const res = await call(ctx, { method: 'GET', url: '/portal?token=not-a-real-token' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('This link has expired');
    expect(res.body).toContain('href="/portal/request"');
    expect(res.headers['set-cookie']?.toString() ?? '').not.toContain('tessera_portal=');
  });

  it('answers an expired link the same way', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    await createLicense(ctx, t, product.id, { email: 'late@example.com' });
    const { url } = (await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: t.auth, json: { email: 'late@example.com' } })).body;
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('portal_tokens').set({ expires_at: Date.now() - 1 }).where('email_normalized', '=', 'late@example.com')));
    const res = await new PortalBrowser(ctx).request('GET', url);
    expect(res.status).toBe(400);
    expect(res.body).toContain('Get a new link');
  });

  it('sends a fresh e-mailed link that expires 2 hours after the request', async () => {
    const t = await createTenant(ctx);
    await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'twohours@example.com' });
    const before = Date.now();
    await new PortalBrowser(ctx).requestLink('twohours@example.com');
    const row = await ctx.store.read.first(ctx.store.db.selectFrom('portal_tokens').selectAll().where('email_normalized', '=', 'twohours@example.com'));
    expect(row!.kind).toBe('link');
    expect(row!.account_id).toBeNull();
    expect(row!.expires_at - before).toBeGreaterThanOrEqual(2 * 3600_000);
    expect(row!.expires_at - before).toBeLessThan(2 * 3600_000 + 5000);
  });

  it('sends the session to the request page once it has ended', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/portal', headers: { cookie: 'tessera_portal=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/portal/request?notice=session-ended');
    const page = await call(ctx, { method: 'GET', url: '/portal/request?notice=session-ended' });
    expect(page.body).toContain('Your portal session has ended');
    const none = await call(ctx, { method: 'GET', url: '/portal' });
    expect(none.status).toBe(303);
    expect(none.headers.location).toBe('/portal/request');
  });

  it('re-renders the form for an invalid address and queues nothing', async () => {
    const browser = new PortalBrowser(ctx);
    const res = await browser.requestLink('not-an-address');
    expect(res.status).toBe(400);
    expect(res.body).toContain('Enter a valid e-mail address');
    expect(res.body).toContain('aria-invalid="true"');
    expect(await outboxCount('not-an-address')).toBe(0);
  });

  it('answers an address without licenses exactly like one with licenses, and e-mails nobody', async () => {
    const t = await createTenant(ctx);
    await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'has@example.com' });
    const withLicenses = await new PortalBrowser(ctx).requestLink('has@example.com');
    const without = await new PortalBrowser(ctx).requestLink('hasnot@example.com');
    expect(without.status).toBe(withLicenses.status);
    const notice = (html: string) => /<div class="notice[^>]*>(.*?)<\/div>/.exec(html)![1]!.replace(/\S+@example\.com/, 'X');
    expect(notice(without.body)).toBe(notice(withLicenses.body));
    await transport.waitFor('has@example.com', 'portal_link');
    expect(await outboxCount('hasnot@example.com')).toBe(0);
  });

  it('refuses a reset where the product forbids it, keeping the devices', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t, { portalAllowDeviceReset: false });
    const license = await createLicense(ctx, t, product.id, { email: 'noreset@example.com' });
    await activate(ctx, t.auth, license.key, product.id, 'kept');
    const browser = await privateSession(t.auth, 'noreset@example.com');
    expect(browser.lastHtml).toContain('Device resets are not available in the portal for this product');
    expect(browser.lastHtml).not.toContain('action="/portal/licenses/reset"');
    const res = await browser.request('POST', '/portal/licenses/reset', { key: license.key, csrf: browser.csrf });
    expect(res.status).toBe(403);
    expect(res.body).toContain('Device resets are not available for this product');
    const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } });
    expect(stored.body.activeDevices).toHaveLength(1);
  });

  it('refuses a reset past the product limit and says when the next one is possible', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t, { portalDeviceResetLimit: 1, portalDeviceResetWindowDays: 7 });
    expect(product.portalDeviceResetLimit).toBe(1);
    const license = await createLicense(ctx, t, product.id, { email: 'limited@example.com' });
    await activate(ctx, t.auth, license.key, product.id, 'first');
    const browser = await privateSession(t.auth, 'limited@example.com');
    expect((await browser.request('POST', '/portal/licenses/reset', { key: license.key, confirm: 'yes', csrf: browser.csrf })).status).toBe(303);
    await activate(ctx, t.auth, license.key, product.id, 'second');
    const page = await browser.request('GET', '/portal');
    expect(page.body).toContain('Next reset possible on');
    expect(page.body).not.toContain('action="/portal/licenses/reset"');
    const refused = await browser.request('POST', '/portal/licenses/reset', { key: license.key, csrf: browser.csrf });
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(7 * 86400 - 60);
    expect(retryAfter).toBeLessThanOrEqual(7 * 86400);
    expect([refused.headers['ratelimit-limit'], refused.headers['ratelimit-remaining'], refused.headers['ratelimit-reset']]).toEqual(['1', '0', String(retryAfter)]);
    expect(refused.body).toContain('Next reset possible on');
    const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } });
    expect(stored.body.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(['second']);
    // The operator's own API reset is not limited by the portal allowance.
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses/devices/reset', headers: { ...t.auth, 'license-key': license.key } })).status).toBe(200);
  });

  it('validates the per-product reset limit fields', async () => {
    const t = await createTenant(ctx);
    for (const bad of [{ portalDeviceResetLimit: 0 }, { portalDeviceResetLimit: 1.5 }, { portalDeviceResetWindowDays: 366 }, { portalDeviceResetWindowDays: '30' }]) {
      const res = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: t.auth, json: { name: 'X', ...bad } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const product = await createProduct(ctx, t);
    const patched = await call(ctx, { method: 'PATCH', url: `/api/v1/products/${product.id}`, headers: t.auth, json: { portalDeviceResetLimit: 10, portalDeviceResetWindowDays: 90 } });
    expect(patched.body).toMatchObject({ portalDeviceResetLimit: 10, portalDeviceResetWindowDays: 90 });
  });

  it('refuses private sessions for bad input or without an API key', async () => {
    const t = await createTenant(ctx);
    const url = '/api/v1/portal/sessions/private';
    for (const json of [{}, { email: 'nope' }, { email: '' }, { email: 42 }]) {
      const res = await call(ctx, { method: 'POST', url, headers: t.auth, json });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await call(ctx, { method: 'POST', url, json: { email: 'a@example.com' } })).status).toBe(401);
    expect((await call(ctx, { method: 'POST', url, headers: { authorization: 'Bearer sk_nope' }, json: { email: 'a@example.com' } })).status).toBe(403);
    const stored = await ctx.store.read.all(ctx.store.db.selectFrom('portal_tokens').select('token_hash').where('email_normalized', '=', 'a@example.com'));
    expect(stored).toEqual([]);
  });

  it('answers an oversized or malformed form with an HTML error page', async () => {
    const big = await ctx.app.inject({ method: 'POST', url: '/portal/request', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `email=${'a'.repeat(10_000)}` });
    expect(big.statusCode).toBe(413);
    expect(big.headers['content-type']).toMatch(/^text\/html/);
    const missing = await ctx.app.inject({ method: 'POST', url: '/portal/request', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'nothing=here' });
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain('Back to the portal');
    expect(missing.body).not.toMatch(/at .*\.ts:\d+/);
  });
});

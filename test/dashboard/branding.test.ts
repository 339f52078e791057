import { expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { signIn, textOf, type WebBrowser } from '../support/dashboard.ts';
import { multipartBody } from '../support/dashboard-forms.ts';
import { PNG } from '../support/images.ts';
import { PortalBrowser, portalLinkIn } from '../support/mail.ts';
import { addMember } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';

type Mail = { kind: string; to: string; subject: string; text: string; html: string; fromName?: string | null };

/** Every e-mail queued for `to`, oldest first, as the outbox holds it (what the transport sends). */
async function mailsTo(ctx: TestContext, to: string): Promise<Mail[]> {
  const rows = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').selectAll().where('kind', '=', 'mail').orderBy('created_at').orderBy('id'));
  return rows.map((r) => JSON.parse(r.payload) as Mail).filter((m) => m.to === to);
}

/** Posts the branding form (multipart, as the browser sends it) with the session's cookie. */
async function postBranding(ctx: TestContext, browser: WebBrowser, fields: Record<string, string>, logo?: { name: string; type: string; data: Buffer }) {
  const body = multipartBody(fields, logo && { ...logo, field: 'logo' });
  return ctx.app.inject({ method: 'POST', url: '/dashboard/settings', headers: { cookie: browser.cookieHeader, 'content-type': body.contentType }, payload: body.payload });
}

async function brandedTenant(ctx: TestContext, name = 'Acme Tools', colour = '#AA3300'): Promise<{ t: Tenant; owner: WebBrowser }> {
  const t = await createTenant(ctx);
  const owner = await signIn(ctx, t.email);
  await owner.request('GET', '/dashboard/settings');
  const saved = await postBranding(ctx, owner, { csrf: owner.csrf, displayName: name, accentColor: colour }, { name: 'logo.png', type: 'image/png', data: PNG });
  expect(saved.statusCode, saved.body).toBe(303);
  return { t, owner };
}

const stored = (ctx: TestContext, accountId: string) => ctx.services.branding.get(accountId);

forEachStore('branding', (kind) => {
  const ctx = useTestApp(kind);

  it('an owner sets name, accent and logo; the logo and the accent stylesheet are served safely', async () => {
    const { t, owner } = await brandedTenant(ctx);
    const brand = await stored(ctx, t.accountId);
    expect(brand).toMatchObject({ displayName: 'Acme Tools', accentColor: '#aa3300' });
    expect(brand.logo).not.toBeNull();
    const page = await owner.request('GET', '/dashboard/settings?notice=branding-saved');
    expect(textOf(page.body)).toContain('Branding saved');
    expect(page.body).toContain('value="Acme Tools"');
    expect(page.body).toContain('value="#aa3300"');
    const logo = await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${t.accountId}/logo` });
    expect(logo.statusCode).toBe(200);
    expect(logo.headers['content-type']).toBe('image/png');
    expect(logo.headers['x-content-type-options']).toBe('nosniff');
    expect(logo.headers['content-security-policy']).toBe("default-src 'none'");
    expect(logo.rawPayload.equals(PNG)).toBe(true);
    const again = await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${t.accountId}/logo`, headers: { 'if-none-match': logo.headers.etag as string } });
    expect(again.statusCode).toBe(304);
    const css = await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${t.accountId}/accent.css` });
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.body).toBe(':root { --brand: #aa3300; --brand-dark: #aa3300; }\n.topbar { border-top: 4px solid #aa3300; }\n');
    // Removing the logo (asked first) leaves name and colour.
    await owner.request('GET', '/dashboard/settings');
    expect((await owner.request('POST', '/dashboard/settings/logo/delete', { csrf: owner.csrf })).body).toContain('name="confirm" value="yes"');
    expect((await owner.request('POST', '/dashboard/settings/logo/delete', { csrf: owner.csrf, confirm: 'yes' })).status).toBe(303);
    expect(await stored(ctx, t.accountId)).toMatchObject({ displayName: 'Acme Tools', accentColor: '#aa3300', logo: null });
    expect((await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${t.accountId}/logo` })).statusCode).toBe(404);
  });

  it('bad input shows the form again (400) naming each wrong field, and stores nothing', async () => {
    const { t, owner } = await brandedTenant(ctx);
    const before = JSON.stringify(await stored(ctx, t.accountId));
    const logoBefore = (await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${t.accountId}/logo` })).rawPayload;
    await owner.request('GET', '/dashboard/settings');
    const cases: [Record<string, string>, { name: string; type: string; data: Buffer } | undefined, string][] = [
      [{ displayName: 'New name', accentColor: 'red;} body{background:url(//evil.test)}' }, undefined, 'Accent colour must be a colour as #rrggbb'],
      [{ displayName: 'New name', accentColor: '#12345' }, undefined, 'Accent colour must be a colour as #rrggbb'],
      [{ displayName: 'New name', accentColor: '"><script>alert(1)</script>' }, undefined, 'Accent colour must be a colour as #rrggbb'],
      [{ displayName: 'x'.repeat(81), accentColor: '#112233' }, undefined, 'Display name must be at most 80 characters'],
      [{ displayName: 'Two\r\nBcc: lines', accentColor: '#112233' }, undefined, 'Display name must be one line of text'],
      // Good fields, bad logo: neither is stored.
      [{ displayName: 'New name', accentColor: '#112233' }, { name: 'big.png', type: 'image/png', data: Buffer.concat([PNG, Buffer.alloc(256 * 1024)]) }, 'The image is larger than 256 KiB.'],
      [{ displayName: 'New name', accentColor: '#112233' }, { name: 'page.png', type: 'image/png', data: Buffer.from('<svg onload="alert(1)"></svg>') }, 'The image must be a PNG, JPEG or WebP file.'],
      [{ displayName: 'New name', accentColor: '#112233' }, { name: 'logo.gif', type: 'image/gif', data: Buffer.from('GIF89a\x01\x00\x01\x00') }, 'The image must be a PNG, JPEG or WebP file.'],
    ];
    for (const [fields, logo, message] of cases) {
      const res = await postBranding(ctx, owner, { csrf: owner.csrf, ...fields }, logo);
      expect(res.statusCode, message).toBe(400);
      expect(textOf(res.body)).toContain(message);
      expect(res.body).not.toContain('<script>alert(1)');
      expect(JSON.stringify(await stored(ctx, t.accountId)), message).toBe(before);
    }
    // Two wrong fields at once: both named.
    const both = await postBranding(ctx, owner, { csrf: owner.csrf, displayName: 'x'.repeat(81), accentColor: 'blue' });
    expect(textOf(both.body)).toContain('Display name must be at most 80 characters');
    expect(textOf(both.body)).toContain('Accent colour must be a colour as #rrggbb');
    expect((await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${t.accountId}/logo` })).rawPayload.equals(logoBefore)).toBe(true);
    // Without a CSRF token: 403, nothing stored.
    expect((await postBranding(ctx, owner, { displayName: 'Forged', accentColor: '#000000' })).statusCode).toBe(403);
    expect(JSON.stringify(await stored(ctx, t.accountId))).toBe(before);
    // Emptying the fields clears them.
    expect((await postBranding(ctx, owner, { csrf: owner.csrf, displayName: '', accentColor: '' })).statusCode).toBe(303);
    expect(await stored(ctx, t.accountId)).toMatchObject({ displayName: null, accentColor: null });
  });

  it("roles: an admin changes it, a viewer sees it and a viewer's forged post is refused, support cannot reach it", async () => {
    const { t, owner } = await brandedTenant(ctx);
    const before = JSON.stringify(await stored(ctx, t.accountId));
    const viewer = await addMember(ctx, owner, 'viewer');
    const page = await viewer.browser.request('GET', '/dashboard/settings');
    expect(page.status).toBe(200);
    expect(page.body).not.toContain('Save branding');
    // The owner's form replayed with the viewer's session and a valid CSRF token of theirs.
    const forged = await postBranding(ctx, viewer.browser, { csrf: viewer.browser.csrf, displayName: 'Hijacked', accentColor: '#000000' }, { name: 'x.png', type: 'image/png', data: PNG });
    expect(forged.statusCode).toBe(403);
    expect((await viewer.browser.request('POST', '/dashboard/settings/logo/delete', { csrf: viewer.browser.csrf, confirm: 'yes' })).status).toBe(403);
    expect(JSON.stringify(await stored(ctx, t.accountId))).toBe(before);
    const support = await addMember(ctx, owner, 'support');
    expect((await support.browser.request('GET', '/dashboard/settings')).status).toBe(403);
    const admin = await addMember(ctx, owner, 'admin');
    await admin.browser.request('GET', '/dashboard/settings');
    expect((await postBranding(ctx, admin.browser, { csrf: admin.browser.csrf, displayName: 'Admin made', accentColor: '#010203' })).statusCode).toBe(303);
    expect(await stored(ctx, t.accountId)).toMatchObject({ displayName: 'Admin made' });
  });

  it("tenant isolation: one account's post changes only its own branding; another account's brand never shows", async () => {
    const a = await brandedTenant(ctx, 'Vendor A', '#0a0a0a');
    const b = await createTenant(ctx);
    const bBrowser = await signIn(ctx, b.email);
    const page = await bBrowser.request('GET', '/dashboard/settings');
    expect(page.body).not.toContain('Vendor A');
    expect(page.body).not.toContain(a.t.accountId);
    expect((await postBranding(ctx, bBrowser, { csrf: bBrowser.csrf, displayName: 'Vendor B', accentColor: '#0b0b0b' })).statusCode).toBe(303);
    expect(await stored(ctx, a.t.accountId)).toMatchObject({ displayName: 'Vendor A', accentColor: '#0a0a0a' });
    expect(await stored(ctx, b.accountId)).toMatchObject({ displayName: 'Vendor B', accentColor: '#0b0b0b', logo: null });
    expect((await ctx.app.inject({ method: 'GET', url: `/portal/assets/brand/${b.accountId}/logo` })).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'GET', url: '/portal/assets/brand/acc_unknown/accent.css' })).statusCode).toBe(404);
  });

  it('every e-mail to customers carries the brand: sender name, header with logo, signature; operators\' e-mails stay neutral', async () => {
    const { t } = await brandedTenant(ctx, 'Acme "Tools" <ltd>', '#aa3300');
    const product = await createProduct(ctx, t, { name: 'Editor' });
    const to = `brand-${Date.now()}@example.com`;
    const license = await createLicense(ctx, t, product.id, { email: to, sendEmail: true, type: 'timed', expiresAt: '2099-01-01' });
    const rotated = await call(ctx, { method: 'POST', url: '/api/v1/licenses/rotate-key', headers: { ...t.auth, 'license-key': license.key }, json: { notify: true } });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    await new PortalBrowser(ctx).requestLink(to);
    const principal = cliPrincipal(t.accountId);
    const mailed = { key: license.key, accountId: t.accountId, productId: product.id, expiresAt: Date.parse('2099-01-01'), maxDevices: 3 };
    await ctx.services.units.run(async (unit) => {
      await ctx.services.lifecycleMail.queue(principal, unit, { to, licenses: [mailed], payUrl: 'https://pay.example/inv' });
      await ctx.services.lifecycleMail.extended(principal, unit, { to, kind: 'renewal', license: mailed });
      await ctx.services.lifecycleMail.extended(principal, unit, { to, kind: 'upgrade', license: mailed });
    });
    const mails = await mailsTo(ctx, to);
    expect(mails.map((m) => m.kind).sort()).toEqual(['license_renewal', 'license_upgrade', 'payment_failed', 'portal_link', 'purchase', 'purchase'].sort());
    for (const m of mails) {
      expect(m.fromName, m.kind).toBe('Acme "Tools" <ltd>');
      expect(m.html, m.kind).toContain('Acme &quot;Tools&quot; &lt;ltd&gt;</span>');
      expect(m.html, m.kind).toContain(`src="${ctx.config.baseUrl}/portal/assets/brand/${t.accountId}/logo?v=`);
      expect(m.html, m.kind).toContain('border-top:6px solid #aa3300');
      expect(m.html, m.kind).toContain('— Acme &quot;Tools&quot; &lt;ltd&gt;</p>');
      expect(m.html, m.kind).not.toContain('tessera:brand');
      expect(m.text.startsWith('Acme "Tools" <ltd>\n\n'), m.kind).toBe(true);
      expect(m.text.endsWith('\n-- \nAcme "Tools" <ltd>\n'), m.kind).toBe(true);
    }
    // An operator's own e-mail (a password reset) speaks for the installation, not a brand.
    await ctx.services.dashboard.requestReset(t.email);
    const [reset] = await mailsTo(ctx, t.email);
    expect(reset!.fromName ?? null).toBeNull();
    expect(reset!.html).not.toContain('Acme');
    expect(reset!.html).not.toContain('tessera:brand');
  });

  it("an account without branding sends e-mails as before; a link to several vendors' licenses is neutral", async () => {
    const plain = await createTenant(ctx);
    const product = await createProduct(ctx, plain);
    const to = `plain-${Date.now()}@example.com`;
    await createLicense(ctx, plain, product.id, { email: to, sendEmail: true });
    const [purchase] = await mailsTo(ctx, to);
    expect(purchase!.fromName ?? null).toBeNull();
    expect(purchase!.text.startsWith('Your license for Test App')).toBe(true);

    const { t } = await brandedTenant(ctx, 'Branded Vendor');
    await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: to });
    await new PortalBrowser(ctx).requestLink(to);
    const link = (await mailsTo(ctx, to)).find((m) => m.kind === 'portal_link')!;
    expect(link.fromName ?? null).toBeNull();
    expect(link.html).not.toContain('Branded Vendor');
  });
});

forEachStore('branded portal', (kind) => {
  const ctx = useTestApp(kind);

  it("one vendor's customer sees its name, logo and accent; several vendors' customer sees each card's vendor", async () => {
    const { t } = await brandedTenant(ctx, 'Acme Tools', '#aa3300');
    const product = await createProduct(ctx, t, { name: 'Editor' });
    const to = `portal-${Date.now()}@example.com`;
    await createLicense(ctx, t, product.id, { email: to });
    const browser = new PortalBrowser(ctx);
    await browser.requestLink(to);
    const mail = (await mailsTo(ctx, to)).find((m) => m.kind === 'portal_link')!;
    expect(mail.fromName).toBe('Acme Tools');
    const page = await browser.open(portalLinkIn(mail as never));
    expect(page.status).toBe(200);
    expect(page.body).toContain('<title>Your licenses · Acme Tools</title>');
    expect(page.body).toMatch(new RegExp(`<a class="brand" href="/portal"><img class="brand-logo" src="/portal/assets/brand/${t.accountId}/logo\\?v=\\d+" alt="">Acme Tools</a>`));
    expect(page.body).toContain(`<link rel="stylesheet" href="/portal/assets/brand/${t.accountId}/accent.css?v=aa3300">`);
    expect(page.body).not.toContain('class="vendor"');

    // The same address buys from a second vendor: neutral header, each card names its vendor.
    const other = await brandedTenant(ctx, 'Beta Soft', '#00aa33');
    await createLicense(ctx, other.t, (await createProduct(ctx, other.t, { name: 'Viewer' })).id, { email: to });
    const both = await browser.request('GET', '/portal');
    expect(both.body).toContain('<a class="brand" href="/portal">License portal</a>');
    expect(both.body).not.toContain('accent.css');
    expect(textOf(both.body)).toContain('From Acme Tools');
    expect(textOf(both.body)).toContain('From Beta Soft');

    // A private session (one account's link) wears that account's brand only.
    const res = await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: other.t.auth, json: { email: to } });
    const priv = new PortalBrowser(ctx);
    const opened = await priv.open(res.body.url);
    expect(opened.body).toContain('<title>Your licenses · Beta Soft</title>');
    expect(opened.body).not.toContain('Acme Tools');
  });
});

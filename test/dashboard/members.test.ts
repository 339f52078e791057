import { expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { PASSWORD, signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { addMember, invitationLink, newAddress } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';

/** What a change by anyone would alter, read back as the owner's service calls see it. */
async function snapshot(ctx: TestContext, t: Tenant) {
  const p = cliPrincipal(t.accountId);
  return JSON.stringify({
    products: await ctx.services.products.list(p),
    keys: (await ctx.services.apiKeys.list(p)).map((k) => [k.id, k.revokedAt]),
    members: await ctx.services.members.list(p),
    invitations: (await ctx.services.members.invitations(p)).map((i) => i.email),
    licenses: (await call(ctx, { method: 'GET', url: `/api/v1/products/${(await ctx.services.products.list(p))[0]!.id}/licenses`, headers: t.auth })).body,
    webhooks: (await call(ctx, { method: 'GET', url: '/api/v1/webhooks', headers: t.auth })).body,
  });
}

/** A route's path with its parameters filled from the owner's objects. */
const fill = (url: string, ids: Record<string, string>) => url.replace(/:([A-Za-z]+)/g, (_m, name: string) => ids[name] ?? `${name}-none`);

forEachStore('members and roles', (kind) => {
  const ctx = useTestApp(kind);

  it('an owner invites by e-mail; the invitee chooses a password, signs in with their own address and sees their role', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const support = await addMember(ctx, owner, 'support');
    const account = await support.browser.request('GET', '/dashboard/account');
    expect(textOf(account.body)).toMatch(new RegExp(`E-mail ${support.email.replace(/[.+]/g, '\\$&')} Role Support`));
    // A new browser signs in with the chosen password.
    await signIn(ctx, support.email);
    // The owner sees them listed; the first owner is the account's own sign-in.
    const list = textOf((await owner.request('GET', '/dashboard/members')).body);
    expect(list).toContain(`${t.email} (you) Owner (first owner)`);
    expect(list).toContain(`${support.email} Support`);
    // The link worked once.
    const again = await new WebBrowser(ctx).request('GET', await invitationLink(ctx, support.email));
    expect(again.status).toBe(400);
    expect(textOf(again.body)).toContain('This invitation does not work');
  });

  it('a support member fixes a license and the owner sees who did it; payments, API keys and members stay out of reach', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id);
    const owner = await signIn(ctx, t.email);
    const { browser: support, email } = await addMember(ctx, owner, 'support');
    const nav = (await support.request('GET', '/dashboard/licenses')).body;
    expect(nav).toContain('href="/dashboard/licenses"');
    expect(nav).not.toContain('href="/dashboard/payments"');
    expect(nav).not.toContain('href="/dashboard/api-keys"');
    await support.request('GET', `/dashboard/licenses/${license.key}`);
    const revoked = await support.request('POST', `/dashboard/licenses/${license.key}/revoke`, { confirm: 'yes', csrf: support.csrf });
    expect(revoked.status).toBe(303);
    const page = textOf((await owner.request('GET', `/dashboard/licenses/${license.key}`)).body);
    expect(page).toContain(`Revoked Dashboard (${email})`);
    const keysBefore = (await ctx.services.apiKeys.list(cliPrincipal(t.accountId))).length;
    const csrf = support.csrf;
    for (const [method, url] of [
      ['GET', '/dashboard/payments'],
      ['POST', '/dashboard/payments/connect'],
      ['GET', '/dashboard/api-keys'],
      ['POST', '/dashboard/api-keys'],
      ['GET', '/dashboard/members'],
      ['POST', '/dashboard/members/invite'],
      ['POST', `/dashboard/products/${product.id}`],
    ] as const) {
      const res = await support.request(method, url, method === 'POST' ? { name: 'x', email: 'x@example.com', role: 'owner', csrf } : undefined);
      expect(res.status, `${method} ${url}`).toBe(403);
      expect(textOf(res.body)).toContain('Your role in this account does not allow this');
    }
    expect((await ctx.services.apiKeys.list(cliPrincipal(t.accountId))).length).toBe(keysBefore);
    // Products are read only for support.
    expect((await support.request('GET', `/dashboard/products/${product.id}`)).status).toBe(200);
  });

  it("a viewer cannot change anything by any route: every owner's form replayed with the viewer's session and a valid CSRF token is refused, nothing changed", async () => {
    const t = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id, { email: 'buyer@example.com' });
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...t.auth, 'license-key': license.key }, json: { productId: product.id, device: { identifier: 'd1', name: 'Laptop' } } });
    const owner = await signIn(ctx, t.email);
    const other = await addMember(ctx, owner, 'admin');
    const { browser: viewer } = await addMember(ctx, owner, 'viewer');
    const keyId = (await ctx.services.apiKeys.list(cliPrincipal(t.accountId)))[0]!.id;
    const ids = { id: product.id, key: license.key, keyId, productId: product.id };
    const before = await snapshot(ctx, t);
    const writes = ctx.app.signedInRoutes.filter((r) => r.method !== 'GET');
    expect(writes.length).toBeGreaterThan(25);
    // A viewer's own sign-in (password, e-mail, two-factor): theirs to change; the snapshot below proves nothing shared changed.
    const own = (url: string) => url.startsWith('/dashboard/account/');
    const accepted: string[] = [];
    await viewer.request('GET', '/dashboard');
    const csrf = viewer.csrf;
    for (const route of writes) {
      let url = fill(route.url, ids);
      if (route.url.startsWith('/dashboard/licenses/:')) url = fill(route.url, { ...ids, id: license.key });
      if (route.url.startsWith('/dashboard/members/:')) url = fill(route.url, { ...ids, id: other.id });
      if (route.url.startsWith('/dashboard/api-keys/:')) url = fill(route.url, { ...ids, id: keyId });
      // The fields an owner's form would send, confirmation included.
      const form = { csrf, confirm: 'yes', name: 'pwned', email: 'pwned@example.com', role: 'owner', revoked: 'on', maxDevices: '99', device: 'd1', force: 'on' };
      const res = await viewer.request(route.method as 'POST', url, form);
      if (own(route.url)) continue;
      if (res.status !== 403 || !textOf(res.body).includes('does not allow this')) accepted.push(`${route.method} ${route.url}: ${res.status}`);
    }
    expect(accepted).toEqual([]);
    expect(await snapshot(ctx, t)).toBe(before);
    // The same session still reads every screen an admin reads, members excepted.
    for (const url of ['/dashboard', '/dashboard/products', '/dashboard/licenses', `/dashboard/licenses/${license.key}`, '/dashboard/api-keys', '/dashboard/payments', '/dashboard/webhooks']) {
      expect((await viewer.request('GET', url)).status, url).toBe(200);
    }
    expect((await viewer.request('GET', '/dashboard/members')).status).toBe(403);
  });

  it('a role change applies at the next click; a removed member is signed out at once and cannot sign in again', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id);
    const owner = await signIn(ctx, t.email);
    const member = await addMember(ctx, owner, 'viewer');
    await member.browser.request('GET', `/dashboard/licenses/${license.key}`);
    const csrf = member.browser.csrf;
    expect((await member.browser.request('POST', `/dashboard/licenses/${license.key}/revoke`, { confirm: 'yes', csrf })).status).toBe(403);
    await owner.request('GET', '/dashboard/members');
    expect((await owner.request('POST', `/dashboard/members/${member.id}/role`, { role: 'support', csrf: owner.csrf })).status).toBe(303);
    expect((await member.browser.request('POST', `/dashboard/licenses/${license.key}/revoke`, { confirm: 'yes', csrf })).status).toBe(303);

    await owner.request('GET', '/dashboard/members');
    const ask = await owner.request('POST', `/dashboard/members/${member.id}/remove`, { csrf: owner.csrf });
    expect(ask.status).toBe(200);
    expect(textOf(ask.body)).toContain(`Remove ${member.email}?`);
    expect((await owner.request('POST', `/dashboard/members/${member.id}/remove`, { confirm: 'yes', csrf: owner.csrf })).status).toBe(303);
    const after = await member.browser.request('GET', '/dashboard/licenses');
    expect(after.status).toBe(303);
    expect(after.headers.location).toContain('notice=session-ended');
    const again = new WebBrowser(ctx);
    await again.request('GET', '/dashboard/login');
    expect((await again.request('POST', '/dashboard/login', { email: member.email, password: PASSWORD, csrf: again.csrf })).status).toBe(401);
  });

  it('protects the first owner: no one removes or demotes it, another owner included; admins cannot manage members', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const second = await addMember(ctx, owner, 'owner');
    const admin = await addMember(ctx, owner, 'admin');
    await second.browser.request('GET', '/dashboard/members');
    const secondCsrf = second.browser.csrf;
    const demote = await second.browser.request('POST', `/dashboard/members/${t.accountId}/role`, { role: 'viewer', csrf: secondCsrf });
    expect(demote.status).toBe(400);
    const remove = await second.browser.request('POST', `/dashboard/members/${t.accountId}/remove`, { confirm: 'yes', csrf: secondCsrf });
    expect(remove.status).toBe(404);
    // The second owner may manage others, admins may not.
    expect((await admin.browser.request('GET', '/dashboard/members')).status).toBe(200);
    expect((await admin.browser.request('POST', `/dashboard/members/${second.id}/role`, { role: 'viewer', csrf: admin.browser.csrf })).status).toBe(403);
    expect((await second.browser.request('POST', `/dashboard/members/${admin.id}/role`, { role: 'viewer', csrf: secondCsrf })).status).toBe(303);
    const roles = (await ctx.services.members.list(cliPrincipal(t.accountId))).map((m) => [m.email, m.role]);
    expect(roles).toEqual([
      [t.email, 'owner'],
      [second.email, 'owner'],
      [admin.email, 'viewer'],
    ]);
  });

  it.each([
    ['a bad address', { email: 'not-an-address', role: 'viewer' }, 'f-email-error'],
    ['an unknown role', { email: 'someone@example.com', role: 'root' }, 'f-role-error'],
    ['an address that signs in already', { email: 'OWNER', role: 'viewer' }, 'f-email-error'],
  ])('refuses an invitation with %s, and sends nothing', async (_label, fields, errorId) => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    await owner.request('GET', '/dashboard/members');
    const email = fields.email === 'OWNER' ? t.email.toUpperCase() : fields.email;
    const res = await owner.request('POST', '/dashboard/members/invite', { ...fields, email, csrf: owner.csrf });
    expect(res.status).toBe(400);
    expect(res.body).toContain(`id="${errorId}"`);
    expect(await ctx.services.members.invitations(cliPrincipal(t.accountId))).toEqual([]);
  });

  it('an invitation is refused with a short password (the link still works), and when the address signed in elsewhere meanwhile', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const email = newAddress('late');
    await owner.request('GET', '/dashboard/members');
    await owner.request('POST', '/dashboard/members/invite', { email, role: 'viewer', csrf: owner.csrf });
    const link = await invitationLink(ctx, email);
    const token = new URL(link).searchParams.get('token')!;
    const browser = new WebBrowser(ctx);
    await browser.request('GET', link);
    const short = await browser.request('POST', '/dashboard/invitation', { token, password: 'short', csrf: browser.csrf });
    expect(short.status).toBe(400);
    expect(short.body).toContain('id="f-password-error"');
    await ctx.services.accounts.create({ email, password: PASSWORD });
    const taken = await browser.request('POST', '/dashboard/invitation', { token, password: PASSWORD, csrf: browser.csrf });
    expect(taken.status).toBe(400);
    expect(await ctx.services.members.findByEmail(email)).toBeUndefined();
  });
});

import { expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { createLicense, createProduct, createTenant, type TestContext, useTestApp } from '../support/app.ts';
import { PASSWORD, signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { forEachStore } from '../support/stores.ts';
import { codeFor, enrol } from '../support/two-factor.ts';

/** Password step only: the browser holds a challenge, not a session. */
async function passwordStep(ctx: TestContext, email: string) {
  const browser = new WebBrowser(ctx);
  await browser.request('GET', '/dashboard/login');
  const res = await browser.request('POST', '/dashboard/login', { email, password: PASSWORD, csrf: browser.csrf });
  expect(res.status).toBe(303);
  expect(res.headers.location).toBe('/dashboard/login/code');
  await browser.request('GET', '/dashboard/login/code');
  return browser;
}

forEachStore('two-factor sign-in', (kind) => {
  const ctx = useTestApp(kind);

  it('enrols with a QR code, then signs in with password and code; a code works once, a recovery code once', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const { secret, codes } = await enrol(owner);
    // Shown once: the page afterwards says how many are left, never which.
    const after = (await owner.request('GET', '/dashboard/account/two-factor')).body;
    expect(textOf(after)).toContain('Recovery codes left: 10');
    expect(after).not.toContain(codes[0]);

    const browser = await passwordStep(ctx, t.email);
    expect(browser.cookie('tessera_dashboard')).toBeUndefined();
    const code = codeFor(secret);
    const csrf = browser.csrf;
    const ok = await browser.request('POST', '/dashboard/login/code', { code, csrf });
    expect(ok.status).toBe(303);
    expect((await browser.request('GET', '/dashboard/licenses')).status).toBe(200);

    const replay = await passwordStep(ctx, t.email);
    const again = await replay.request('POST', '/dashboard/login/code', { code, csrf: replay.csrf });
    expect(again.status).toBe(401);
    expect(textOf(again.body)).toContain('This code is not right, or was used already');
    const recovery = await replay.request('POST', '/dashboard/login/code', { code: codes[3]!.toUpperCase(), csrf: replay.csrf });
    expect(recovery.status).toBe(303);
    const reuse = await passwordStep(ctx, t.email);
    expect((await reuse.request('POST', '/dashboard/login/code', { code: codes[3]!, csrf: reuse.csrf })).status).toBe(401);
    expect(textOf((await owner.request('GET', '/dashboard/account/two-factor')).body)).toContain('Recovery codes left: 9');
  });

  it('bypass attempts fail: no session before the code, a challenge is not a session, 5 wrong codes end it, nothing stored in clear', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const { secret, codes } = await enrol(owner);
    const browser = await passwordStep(ctx, t.email);
    // Straight to a page: not signed in.
    const page = await browser.request('GET', '/dashboard/licenses');
    expect(page.status).toBe(303);
    expect(page.headers.location).toMatch(/^\/dashboard\/login/);
    // The challenge's secret as a session cookie: not a session either.
    const forged = await ctx.app.inject({ method: 'GET', url: '/dashboard/licenses', headers: { cookie: `tessera_dashboard=${browser.cookie('tessera_dashboard_2fa')}` } });
    expect(forged.statusCode).toBe(303);
    // Without a challenge, a right code gets nothing.
    const stranger = new WebBrowser(ctx);
    await stranger.request('GET', '/dashboard/login');
    const bare = await stranger.request('POST', '/dashboard/login/code', { code: codeFor(secret), csrf: stranger.csrf });
    expect(bare.headers.location).toBe('/dashboard/login?notice=code-expired');
    expect(stranger.cookie('tessera_dashboard')).toBeUndefined();
    // Five wrong codes end the challenge; the right one after that is refused.
    const csrf = browser.csrf;
    for (let i = 0; i < 4; i++) expect((await browser.request('POST', '/dashboard/login/code', { code: String(100000 + i), csrf })).status).toBe(401);
    expect((await browser.request('POST', '/dashboard/login/code', { code: '999999', csrf })).headers.location).toBe('/dashboard/login?notice=code-expired');
    expect((await browser.request('POST', '/dashboard/login/code', { code: codeFor(secret), csrf })).headers.location).toBe('/dashboard/login?notice=code-expired');
    expect(browser.cookie('tessera_dashboard')).toBeUndefined();
    // At rest: the secret sealed, the recovery codes hashed.
    const dump = JSON.stringify([
      await ctx.store.read.all(ctx.store.db.selectFrom('two_factor').selectAll()),
      await ctx.store.read.all(ctx.store.db.selectFrom('two_factor_recovery_codes').selectAll()),
    ]);
    expect(dump).not.toContain(secret);
    for (const code of codes) expect(dump).not.toContain(code.replace('-', ''));
  });

  it("an owner's switch requires it: a member without it can only set it up, and cannot turn it off", async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id);
    const owner = await signIn(ctx, t.email);
    await owner.request('GET', '/dashboard/members');
    const early = await owner.request('POST', '/dashboard/members/two-factor', { required: 'on', csrf: owner.csrf });
    expect(early.status).toBe(400);
    expect(textOf(early.body)).toContain('turn on your own two-factor sign-in first');
    expect(await ctx.services.twoFactor.isRequired(t.accountId)).toBe(false);
    await enrol(owner);
    await owner.request('GET', '/dashboard/members');
    const email = `support-${Date.now()}@two-factor.example`;
    await owner.request('POST', '/dashboard/members/invite', { email, role: 'support', csrf: owner.csrf });
    expect((await owner.request('POST', '/dashboard/members/two-factor', { required: 'on', csrf: owner.csrf })).status).toBe(303);

    const invitation = await ctx.services.members.invitations(cliPrincipal(t.accountId));
    expect(invitation).toHaveLength(1);
    const rows = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').selectAll().where('kind', '=', 'mail'));
    const text = rows.map((r) => JSON.parse(r.payload) as { to: string; text: string }).find((m) => m.to === email)!.text;
    const member = new WebBrowser(ctx);
    const link = /\/dashboard\/invitation\?token=[A-Za-z0-9_-]+/.exec(text)![0];
    await member.request('GET', link);
    await member.request('POST', '/dashboard/invitation', { token: link.split('=')[1]!, password: PASSWORD, csrf: member.csrf });
    const blocked = await member.request('GET', '/dashboard/licenses');
    expect(blocked.headers.location).toBe('/dashboard/account/two-factor?notice=two-factor-required');
    await member.request('GET', '/dashboard/account/two-factor');
    const csrf = member.csrf;
    const revoke = await member.request('POST', `/dashboard/licenses/${license.key}/revoke`, { confirm: 'yes', csrf });
    expect(revoke.status).toBe(403);
    const { codes } = await enrol(member);
    expect((await member.request('GET', '/dashboard/licenses')).status).toBe(200);
    const off = await member.request('POST', '/dashboard/account/two-factor/disable', { code: codes[0]!, csrf: member.csrf });
    expect(off.status).toBe(400);
    expect(await ctx.services.twoFactor.isEnabled((await ctx.services.members.findByEmail(email))!.id)).toBe(true);
  });
});

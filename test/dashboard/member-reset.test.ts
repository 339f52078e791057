import { expect, it } from 'vitest';
import { createTenant, type TestContext, useTestApp } from '../support/app.ts';
import { PASSWORD, signIn, textOf, WebBrowser } from '../support/dashboard.ts';
import { addMember } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';

/** The reset link in the last password_reset e-mail queued for `to`, or undefined. */
async function resetLinkTo(ctx: TestContext, to: string): Promise<string | undefined> {
  const rows = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').selectAll().where('kind', '=', 'mail').orderBy('created_at').orderBy('id'));
  const mails = rows.map((r) => JSON.parse(r.payload) as { kind: string; to: string; text: string }).filter((m) => m.to === to && m.kind === 'password_reset');
  return mails.length ? /http:\/\/[^\s]+\/dashboard\/reset\?token=[A-Za-z0-9_-]+/.exec(mails.at(-1)!.text)![0] : undefined;
}

async function askReset(ctx: TestContext, email: string) {
  const browser = new WebBrowser(ctx);
  await browser.request('GET', '/dashboard/forgot');
  const asked = await browser.request('POST', '/dashboard/forgot', { email, csrf: browser.csrf });
  expect(asked.status).toBe(200);
  return browser;
}

forEachStore('password reset of invited members', (kind) => {
  const ctx = useTestApp(kind);

  it("an invited member resets their password like the first owner: single-use link, their sessions end, the owner's stay", async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const member = await addMember(ctx, owner, 'support');
    const browser = await askReset(ctx, member.email.toUpperCase());
    const link = await resetLinkTo(ctx, member.email);
    expect(link).toBeDefined();
    expect((await browser.request('GET', link!)).body).toContain('<h1>Choose a new password</h1>');
    const token = new URL(link!).searchParams.get('token')!;
    const csrf = browser.csrf;
    expect((await browser.request('POST', '/dashboard/reset', { token, password: 'short', csrf })).status).toBe(400);
    const done = await browser.request('POST', '/dashboard/reset', { token, password: 'a brand new password', csrf });
    expect(done.headers.location, `${done.status} ${textOf(done.body)}`).toBe('/dashboard/login?notice=password-reset');
    // Their old session ended; the owner's did not; the new password signs in, the old one does not.
    expect((await member.browser.request('GET', '/dashboard')).status).toBe(303);
    expect((await owner.request('GET', '/dashboard')).status).toBe(200);
    expect(await ctx.services.members.verifyPassword(member.email, 'a brand new password')).toBeDefined();
    expect(await ctx.services.members.verifyPassword(member.email, PASSWORD)).toBeUndefined();
    await signIn(ctx, member.email, 'a brand new password');
    // Single use.
    expect((await browser.request('POST', '/dashboard/reset', { token, password: 'and once more please', csrf })).status).toBe(400);
    expect(await ctx.services.accounts.verifyPassword(t.email, 'correct horse battery')).toBeDefined();
  });

  it("a removed member's link is dead, and one sign-in's new link leaves another's alone", async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const a = await addMember(ctx, owner, 'viewer');
    const b = await addMember(ctx, owner, 'admin');
    await askReset(ctx, a.email);
    await askReset(ctx, b.email);
    await askReset(ctx, t.email);
    const linkA = (await resetLinkTo(ctx, a.email))!;
    const linkB = (await resetLinkTo(ctx, b.email))!;
    // The first owner's link and B's both stay live after A's request (one link per sign-in, not per account).
    const probe = new WebBrowser(ctx);
    expect((await probe.request('GET', linkB)).status).toBe(200);
    expect((await probe.request('GET', (await resetLinkTo(ctx, t.email))!)).status).toBe(200);
    // A is removed: their link no longer works and sets nothing.
    await owner.request('GET', '/dashboard/members');
    expect((await owner.request('POST', `/dashboard/members/${a.id}/remove`, { csrf: owner.csrf, confirm: 'yes' })).status).toBe(303);
    const dead = await probe.request('GET', linkA);
    expect(dead.status).toBe(400);
    expect(textOf(dead.body)).toContain('This link does not work');
  });
});

import { expect, it } from 'vitest';
import { createTenant, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { addMember } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('dashboard instance administration', (kind) => {
  const ctx = useTestApp(kind);
  const planOf = async (id: string) => (await ctx.services.accounts.findById(id))!.plan;

  it('lets the first account find any account by a piece of its address and set its plan', async () => {
    const admin = await createTenant(ctx);
    const other = await createTenant(ctx);
    const browser = await signIn(ctx, admin.email);
    expect((await browser.request('GET', '/dashboard/account')).body).toContain('href="/dashboard/instance/accounts"');
    const list = await browser.request('GET', '/dashboard/instance/accounts');
    expect(list.status).toBe(200);
    expect(textOf(list.body)).toContain(admin.email);
    expect(textOf(list.body)).toContain(other.email);
    const found = await browser.request('GET', `/dashboard/instance/accounts?q=${encodeURIComponent(other.email.slice(0, 9).toUpperCase())}`);
    expect(found.body).toContain(`<td>${other.email}</td>`);
    expect(found.body).not.toContain(`<td>${admin.email}`);
    expect(textOf((await browser.request('GET', '/dashboard/instance/accounts?q=%25')).body)).toContain('No account matches.');

    const set = await browser.request('POST', `/dashboard/instance/accounts/${other.accountId}/plan`, { plan: 'plus', csrf: browser.csrf });
    expect(set.status).toBe(303);
    expect(await planOf(other.accountId)).toBe('plus');
    expect(await planOf(admin.accountId)).toBe('free');
  });

  it('refuses a plan that does not exist and a form without its token, changing nothing', async () => {
    const admin = (await ctx.services.accounts.findById(await firstId()))!;
    const target = await createTenant(ctx);
    const browser = await signIn(ctx, admin.email);
    await browser.request('GET', '/dashboard/instance/accounts');
    const bad = await browser.request('POST', `/dashboard/instance/accounts/${target.accountId}/plan`, { plan: 'gold', csrf: browser.csrf });
    expect(bad.status).toBe(400);
    const forged = await browser.request('POST', `/dashboard/instance/accounts/${target.accountId}/plan`, { plan: 'plus' });
    expect(forged.status).toBe(403);
    await browser.request('GET', '/dashboard/instance/accounts');
    const unknown = await browser.request('POST', '/dashboard/instance/accounts/acc_nobody/plan', { plan: 'plus', csrf: browser.csrf });
    expect(unknown.status).toBe(404);
    expect(await planOf(target.accountId)).toBe('free');
  });

  it('shows any other account nothing: the page and its form answer 404', async () => {
    const other = await createTenant(ctx);
    const browser = await signIn(ctx, other.email);
    expect((await browser.request('GET', '/dashboard/account')).body).not.toContain('/dashboard/instance/accounts');
    expect((await browser.request('GET', '/dashboard/instance/accounts')).status).toBe(404);
    await browser.request('GET', '/dashboard/account');
    const set = await browser.request('POST', `/dashboard/instance/accounts/${other.accountId}/plan`, { plan: 'plus', csrf: browser.csrf });
    expect(set.status).toBe(404);
    expect(await planOf(other.accountId)).toBe('free');
  });

  it("is the first account's own sign-in's alone: an owner invited to that account finds nothing and changes no plan", async () => {
    const first = (await ctx.services.accounts.findById(await firstId()))!;
    const other = await createTenant(ctx);
    const member = await addMember(ctx, await signIn(ctx, first.email), 'owner');
    expect((await member.browser.request('GET', '/dashboard/instance/accounts')).status).toBe(404);
    expect((await member.browser.request('GET', '/dashboard/account')).body).not.toContain('/dashboard/instance/accounts');
    const set = await member.browser.request('POST', `/dashboard/instance/accounts/${other.accountId}/plan`, { plan: 'plus', csrf: member.browser.csrf });
    expect(set.status).toBe(404);
    expect(await planOf(other.accountId)).toBe('free');
  });

  async function firstId(): Promise<string> {
    const all = await ctx.store.read.all(ctx.store.db.selectFrom('accounts').select(['id', 'created_at']).orderBy('created_at').orderBy('id').limit(1));
    return all[0]!.id;
  }
});

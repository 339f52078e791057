import { expect, it } from 'vitest';
import { timeOrderedId } from '../../src/core/ids.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { createTenant, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { addMember, newAddress } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';
import { enrol } from '../support/two-factor.ts';

forEachStore('team log', (kind) => {
  const ctx = useTestApp(kind);

  it('invitations, joins, role changes, removals and the two-factor switch are logged with the member who made them', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    // A second owner does part of the work: the log names them, not the account.
    const second = await addMember(ctx, owner, 'owner');
    const support = await addMember(ctx, second.browser, 'support');
    await second.browser.request('GET', '/dashboard/members');
    expect((await second.browser.request('POST', `/dashboard/members/${support.id}/role`, { role: 'admin', csrf: second.browser.csrf })).status).toBe(303);
    const pending = newAddress('pending');
    expect((await owner.request('POST', '/dashboard/members/invite', { email: pending, role: 'viewer', csrf: owner.csrf })).status).toBe(303);
    const [invitation] = await ctx.services.members.invitations(cliPrincipal(t.accountId));
    expect((await owner.request('POST', `/dashboard/members/invitations/${invitation!.id}/revoke`, { csrf: owner.csrf })).status).toBe(303);
    expect((await second.browser.request('POST', `/dashboard/members/${support.id}/remove`, { csrf: second.browser.csrf, confirm: 'yes' })).status).toBe(303);
    await enrol(owner);
    await owner.request('GET', '/dashboard/members');
    expect((await owner.request('POST', '/dashboard/members/two-factor', { required: 'on', csrf: owner.csrf })).status).toBe(303);

    const log = await ctx.services.teamLog.list(cliPrincipal(t.accountId));
    const lines = log.map((e) => [e.type, e.actor.type === 'dashboard_user' ? e.actor.email : e.actor.type, e.changes]).reverse();
    expect(lines).toEqual([
      ['member.invited', t.email, { email: second.email, role: 'owner' }],
      ['member.joined', second.email, { email: second.email, role: 'owner', invitedBy: t.accountId }],
      ['member.invited', second.email, { email: support.email, role: 'support' }],
      ['member.joined', support.email, { email: support.email, role: 'support', invitedBy: second.id }],
      ['member.role_changed', second.email, { email: support.email, role: { from: 'support', to: 'admin' } }],
      ['member.invited', t.email, { email: pending, role: 'viewer' }],
      ['invitation.revoked', t.email, { email: pending, role: 'viewer' }],
      ['member.removed', second.email, { email: support.email, role: 'admin' }],
      ['two_factor.requirement_changed', t.email, { required: { from: false, to: true } }],
    ]);
    // The members page shows it, newest first, in words.
    const page = textOf((await owner.request('GET', '/dashboard/members')).body);
    expect(page).toContain('Team log');
    expect(page).toContain(`${t.email} Required two-factor sign-in for every member`);
    expect(page).toContain(`${second.email} Removed ${support.email} (Admin)`);
    expect(page).toContain(`${second.email} Changed the role of ${support.email} from Support to Admin`);
  });

  it("a refused change logs nothing; another account's log stays apart, and the server API's event list has none of it", async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const viewer = await addMember(ctx, owner, 'viewer');
    const before = (await ctx.services.teamLog.list(cliPrincipal(t.accountId))).length;
    await viewer.browser.request('GET', '/dashboard/account');
    expect((await viewer.browser.request('POST', '/dashboard/members/invite', { email: newAddress('x'), role: 'owner', csrf: viewer.browser.csrf })).status).toBe(403);
    await owner.request('GET', '/dashboard/members');
    expect((await owner.request('POST', '/dashboard/members/invite', { email: 'not-an-address', role: 'owner', csrf: owner.csrf })).status).toBe(400);
    expect((await owner.request('POST', `/dashboard/members/${viewer.id}/role`, { role: 'emperor', csrf: owner.csrf })).status).toBe(400);
    // Another account's member is unknown here.
    const other = await createTenant(ctx);
    const otherOwner = await signIn(ctx, other.email);
    await otherOwner.request('GET', '/dashboard/members');
    const csrf = otherOwner.csrf;
    expect((await otherOwner.request('POST', `/dashboard/members/${viewer.id}/role`, { role: 'admin', csrf })).status).toBe(404);
    expect((await otherOwner.request('POST', `/dashboard/members/${viewer.id}/remove`, { confirm: 'yes', csrf })).status).toBe(404);
    expect((await ctx.services.teamLog.list(cliPrincipal(t.accountId))).length).toBe(before);
    expect(await ctx.services.teamLog.list(cliPrincipal(other.accountId))).toEqual([]);
    const events = await ctx.app.inject({ method: 'GET', url: '/api/v1/events', headers: t.auth });
    expect(events.statusCode).toBe(200);
    expect(events.body).not.toContain('member.');
  });
});

forEachStore('team log retention', (kind) => {
  const ctx = useTestApp(kind);

  it('the housekeeping purges entries older than AUDIT_RETENTION_DAYS (365 by default) and keeps the rest', async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    await addMember(ctx, owner, 'viewer');
    const logged = await ctx.services.teamLog.list(cliPrincipal(t.accountId));
    expect(logged.map((e) => e.type)).toEqual(['member.joined', 'member.invited']);
    // The invitation made 400 days ago: the id carries the time (entries are purged by it).
    const now = Date.now();
    const old = now - 400 * 86_400_000;
    const invited = logged[1]!;
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('member_events').set({ id: timeOrderedId(old), created_at: old }).where('id', '=', invited.id)));
    for (const job of ctx.services.housekeeping) await job(now);
    expect((await ctx.services.teamLog.list(cliPrincipal(t.accountId))).map((e) => e.type)).toEqual(['member.joined']);
  });
});

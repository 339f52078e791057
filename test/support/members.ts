import { expect } from 'vitest';
import type { Role } from '../../src/core/access.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import type { TestContext } from './app.ts';
import { PASSWORD, textOf, WebBrowser } from './dashboard.ts';

let counter = 0;
export const newAddress = (role: string) => `${role}${++counter}-${Date.now()}@members.example`;

/** The invitation link in the last invitation e-mail queued for `to`. */
export async function invitationLink(ctx: TestContext, to: string): Promise<string> {
  const rows = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').selectAll().where('kind', '=', 'mail').orderBy('created_at').orderBy('id'));
  const mails = rows.map((r) => JSON.parse(r.payload) as { kind: string; to: string; text: string; replyTo: string | null }).filter((m) => m.to === to && m.kind === 'member_invitation');
  expect(mails.length, `no invitation for ${to}`).toBeGreaterThan(0);
  return /http:\/\/[^\s]+\/dashboard\/invitation\?token=[A-Za-z0-9_-]+/.exec(mails.at(-1)!.text)![0];
}

/** An owner's browser invites `role`; the invitee accepts and is signed in: their browser. */
export async function addMember(ctx: TestContext, owner: WebBrowser, role: Role, email = newAddress(role)): Promise<{ browser: WebBrowser; email: string; id: string }> {
  await owner.request('GET', '/dashboard/members');
  const invited = await owner.request('POST', '/dashboard/members/invite', { email, role, csrf: owner.csrf });
  expect(invited.status, invited.body).toBe(303);
  const browser = new WebBrowser(ctx);
  const link = await invitationLink(ctx, email);
  const page = await browser.request('GET', link);
  expect(page.status).toBe(200);
  expect(textOf(page.body)).toContain(`You are invited as ${role}`);
  const joined = await browser.request('POST', '/dashboard/invitation', { token: new URL(link).searchParams.get('token')!, password: PASSWORD, csrf: browser.csrf });
  expect(joined.status, joined.body).toBe(303);
  const members = await ctx.services.members.list(cliPrincipal((await ctx.services.members.findByEmail(email))!.accountId));
  return { browser, email, id: members.find((m) => m.email === email)!.id };
}


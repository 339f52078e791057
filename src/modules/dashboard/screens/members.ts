import type { FastifyReply, FastifyRequest } from 'fastify';
import { permits, type Role, ROLES } from '../../../core/access.ts';
import { notFound } from '../../../core/errors.ts';
import { html } from '../../../http/html.ts';
import type { Services } from '../../../services.ts';
import { ROLE_HINTS, ROLE_NAMES } from '../../members/roles.ts';
import { INVITATION_VALIDITY_MS } from '../../members/service.ts';
import type { TeamEvent } from '../../members/team-log.ts';
import type { Actor } from '../../../core/principal.ts';
import { fieldErrors } from '../forms.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen } from '../screen.ts';
import { actionButton, checkbox, csrfInput, emptyForm, emptyState, type FormState, formError, input, pageHead, select, table, when } from '../views.ts';

const SECTION = '/dashboard/members';

const actorText = (actor: Actor) => (actor.type === 'dashboard_user' ? (actor.email ?? 'Dashboard') : actor.type === 'cli' ? 'Command line' : actor.type);
const roleName = (r: unknown) => (typeof r === 'string' && r in ROLE_NAMES ? ROLE_NAMES[r as Role] : String(r));

/** One line of the team log, in words. */
function teamChangeText(e: TeamEvent): string {
  const c = e.changes as { email?: string; role?: unknown; required?: { to?: boolean } };
  switch (e.type) {
    case 'member.invited':
      return `Invited ${c.email} as ${roleName(c.role)}`;
    case 'invitation.revoked':
      return `Revoked the invitation of ${c.email ?? 'an address'}`;
    case 'member.joined':
      return `${c.email} joined as ${roleName(c.role)}`;
    case 'member.role_changed': {
      const r = (c.role ?? {}) as { from?: unknown; to?: unknown };
      return `Changed the role of ${c.email} from ${roleName(r.from)} to ${roleName(r.to)}`;
    }
    case 'member.removed':
      return `Removed ${c.email} (${roleName(c.role)})`;
    case 'two_factor.requirement_changed':
      return c.required?.to ? 'Required two-factor sign-in for every member' : 'Made two-factor sign-in optional';
  }
}
const ROLE_OPTIONS = ROLES.map((r) => ({ value: r, label: `${ROLE_NAMES[r]}: ${ROLE_HINTS[r]}` }));

async function membersPage(req: FastifyRequest, reply: FastifyReply, services: Services, o: { status?: number; form?: FormState; securityForm?: FormState } = {}) {
  const { principal, member: me, viewer } = req.dashboard;
  const members = await services.members.list(principal);
  const invitations = await services.members.invitations(principal);
  const required = await services.twoFactor.isRequired(principal.accountId);
  const log = await services.teamLog.list(principal);
  // Owners manage; admins see the list (core/access.ts). The forms are shown to those who may send them.
  const manages = permits(principal.access, 'members', 'write');
  const form = o.form ?? emptyForm({ email: '', role: 'support' });
  const roleForm = (id: string, role: Role, email: string) =>
    html`<form method="post" action="${SECTION}/${id}/role" class="inline">${csrfInput(viewer.csrf)}<label class="sr-only" for="role-${id}">Role of ${email}</label><select id="role-${id}" name="role">${ROLES.map(
      (r) => html`<option value="${r}"${r === role ? html` selected` : ''}>${ROLE_NAMES[r]}</option>`,
    )}</select><button type="submit" class="secondary small">Change role of ${email}</button></form>`;
  const memberRows = members.map(
    (m) =>
      html`<tr><td>${m.email}${m.id === me.id ? ' (you)' : ''}</td><td>${ROLE_NAMES[m.role]}${m.firstOwner ? ' (first owner)' : ''}</td><td class="hide-phone">${when(m.createdAt)}</td><td class="num">${
        manages && !m.firstOwner ? html`${roleForm(m.id, m.role, m.email)}${actionButton(viewer, `${SECTION}/${m.id}/remove`, `Remove ${m.email}…`)}` : ''
      }</td></tr>`,
  );
  const invitationRows = invitations.map(
    (i) =>
      html`<tr><td>${i.email}</td><td>${ROLE_NAMES[i.role]}</td><td>${when(i.expiresAt)}</td><td class="num">${
        manages ? actionButton(viewer, `${SECTION}/invitations/${i.id}/revoke`, `Revoke the invitation of ${i.email}`) : ''
      }</td></tr>`,
  );
  return render(req, reply, {
    status: o.status,
    title: 'Members',
    section: SECTION,
    content: html`${pageHead('Members', 'Everyone who signs in to this account, and what their role lets them do.')}
<div class="grid top">
<div>
${table('Members', ['E-mail', 'Role', { text: 'Joined', className: 'hide-phone' }, { text: 'Action', className: 'num' }], memberRows)}
<h2>Pending invitations</h2>
${invitations.length === 0 ? emptyState('No pending invitations.') : table('Pending invitations', ['E-mail', 'Role', 'Link valid until', { text: 'Action', className: 'num' }], invitationRows)}
</div>
${
  manages
    ? html`<form class="panel" method="post" action="${SECTION}/invite" novalidate>
<h2>Invite a member</h2>
<p class="hint">We e-mail a link that works once, for ${INVITATION_VALIDITY_MS / 86_400_000} days; they choose their password there.</p>
${formError(form)}
${csrfInput(viewer.csrf)}
${input({ name: 'email', label: 'E-mail address', type: 'email', form, required: true, attrs: html` autocomplete="off" maxlength="254"` })}
${select({ name: 'role', label: 'Role', form, options: ROLE_OPTIONS })}
<div class="form-foot"><button type="submit">Send the invitation</button></div>
</form>`
    : html`<section class="panel"><h2>Managing members</h2><p class="hint">Owners invite, change roles and remove members.</p></section>`
}
</div>
<form class="panel spaced" method="post" action="${SECTION}/two-factor" novalidate>
<h2>Two-factor sign-in</h2>
${formError(o.securityForm ?? emptyForm())}
<p class="hint">${required ? 'Required: every member signs in with a code from their app; members without it must set it up before anything else.' : 'Optional: each member chooses.'}</p>
${manages ? html`${csrfInput(viewer.csrf)}${checkbox({ name: 'required', label: 'Require two-factor sign-in for every member', form: { values: { required: required ? 'on' : undefined }, errors: o.securityForm?.errors ?? {} } })}<div class="form-foot"><button type="submit">Save</button></div>` : ''}
</form>
<section class="spaced" aria-labelledby="team-log-title"><h2 id="team-log-title">Team log</h2>
${
  log.length === 0
    ? emptyState('No change to the team yet.')
    : table(
        'Team log, newest first',
        ['When', 'By', 'Change'],
        log.map((e) => html`<tr><td>${when(e.createdAt)}</td><td>${actorText(e.actor)}</td><td>${teamChangeText(e)}</td></tr>`),
      )
}
</section>`,
  });
}

export const membersScreen: Screen = {
  area: 'members',
  nav: { label: 'Members', href: SECTION },
  notices: {
    'member-invited': { tone: 'ok', text: 'Invitation sent. It works once, for 7 days.' },
    'role-changed': { tone: 'ok', text: 'Role changed. It applies from their next click.' },
    'member-removed': { tone: 'ok', text: 'Member removed. They are signed out.' },
    'invitation-revoked': { tone: 'ok', text: 'Invitation revoked. Its link no longer works.' },
    'two-factor-saved': { tone: 'ok', text: 'Two-factor sign-in setting saved.' },
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => membersPage(req, reply, services));

    app.post(`${SECTION}/invite`, async (req, reply) => {
      const f = formOf(req);
      try {
        await services.members.invite(req.dashboard.principal, f.email ?? '', f.role ?? '');
        return redirectWith(reply, SECTION, 'member-invited');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return membersPage(req, reply, services, { status: 400, form: { values: f, errors } });
      }
    });

    app.post(`${SECTION}/two-factor`, async (req, reply) => {
      try {
        await services.twoFactor.setRequired(req.dashboard.member, formOf(req).required === 'on');
        return redirectWith(reply, SECTION, 'two-factor-saved');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return membersPage(req, reply, services, { status: 400, securityForm: { values: {}, errors } });
      }
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/role`, async (req, reply) => {
      await services.members.changeRole(req.dashboard.principal, req.params.id, formOf(req).role ?? '');
      return redirectWith(reply, SECTION, 'role-changed');
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/remove`, async (req, reply) => {
      const { principal } = req.dashboard;
      const member = (await services.members.list(principal)).find((m) => m.id === req.params.id && !m.firstOwner);
      if (!member) throw notFound('Member');
      if (!confirmed(req)) {
        return askFirst(req, reply, {
          section: SECTION,
          title: `Remove ${member.email}?`,
          text: `${member.email} is signed out at once and can no longer sign in to this account.`,
          action: `${SECTION}/${member.id}/remove`,
          button: 'Remove member',
          cancel: SECTION,
        });
      }
      await services.members.remove(principal, member.id);
      return redirectWith(reply, SECTION, 'member-removed');
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/invitations/:id/revoke`, async (req, reply) => {
      await services.members.revokeInvitation(req.dashboard.principal, req.params.id);
      return redirectWith(reply, SECTION, 'invitation-revoked');
    });
  },
};

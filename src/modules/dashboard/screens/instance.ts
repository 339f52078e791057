import type { FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { html } from '../../../http/html.ts';
import { PLANS } from '../../accounts/service.ts';
import { formOf, redirectWith, render, type Screen } from '../screen.ts';
import { csrfInput, emptyForm, emptyState, input, pageHead, table, when } from '../views.ts';

const SECTION = '/dashboard/instance/accounts';
const PAGE_SIZE = 50;
const PLAN_LABEL: Record<string, string> = { free: 'Free', plus: 'Plus' };

/**
 * The instance administrator's page (the first account): every account of this installation and its
 * plan, which it sets here as the CLI's `account set-plan` does. Anyone else finds nothing here.
 */
/** The installation is administered by the first account's own sign-in (its first owner), not by its other members. */
function requireFirstOwner(req: FastifyRequest): void {
  if (!req.dashboard.member.firstOwner) throw new AppError('not_found', 'Not found.');
}

export const instanceScreen: Screen = {
  // Members of the first account other than its first owner never reach it (requireFirstOwner).
  area: 'members',
  notices: { 'plan-changed': { tone: 'ok', text: 'Plan changed.' } },
  routes: async (app, { services }) => {
    app.get<{ Querystring: { q?: string; after?: string } }>(SECTION, async (req, reply) => {
      requireFirstOwner(req);
      const { account, viewer } = req.dashboard;
      const q = req.query.q?.slice(0, 254) ?? '';
      const after = req.query.after?.slice(0, 254) || undefined;
      const accounts = await services.accounts.pageForAdministrator(account.id, { limit: PAGE_SIZE + 1, afterEmail: after, contains: q });
      const shown = accounts.slice(0, PAGE_SIZE);
      const next = accounts.length > PAGE_SIZE ? shown.at(-1)!.email : undefined;
      const query = (extra: Record<string, string>) => `?${new URLSearchParams({ ...(q ? { q } : {}), ...extra })}`;
      const rows = shown.map(
        (a) => html`<tr><td>${a.email}${a.id === account.id ? html` <span class="badge">You</span>` : ''}</td><td>${PLAN_LABEL[a.plan]}</td><td class="hide-phone">${when(a.createdAt)}</td><td class="num">
<form class="inline" method="post" action="${SECTION}/${a.id}/plan">${csrfInput(viewer.csrf)}<label class="sr-only" for="plan-${a.id}">Plan of ${a.email}</label><select id="plan-${a.id}" name="plan">${PLANS.map(
          (p) => html`<option value="${p}"${p === a.plan ? html` selected` : ''}>${PLAN_LABEL[p]}</option>`,
        )}</select><button type="submit" class="secondary small">Set plan of ${a.email}</button></form></td></tr>`,
      );
      return render(req, reply, {
        title: 'Accounts of this installation',
        section: '/dashboard/account',
        content: html`${pageHead('Accounts of this installation', 'You set up this installation, so you manage every account’s plan here (as `account set-plan` does on the command line).', undefined, html`<a href="/dashboard/account">Account</a>`)}
<form class="filters" method="get" action="${SECTION}" role="search">${input({ name: 'q', label: 'E-mail contains', type: 'search', form: emptyForm({ q }), wide: true, attrs: html` maxlength="254"` })}<button type="submit">Search</button>${q ? html`<a href="${SECTION}">Clear</a>` : ''}</form>
${shown.length === 0 ? emptyState('No account matches.') : table('Accounts', ['E-mail', 'Plan', { text: 'Created', className: 'hide-phone' }, { text: 'Change plan', className: 'num' }], rows)}
<div class="pager">${after ? html`<a href="${SECTION}${q ? query({}) : ''}">First page</a>` : html`<span></span>`}${next ? html`<a class="button secondary" rel="next" href="${SECTION}${query({ after: next })}">Next page</a>` : ''}</div>`,
      });
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/plan`, async (req, reply) => {
      requireFirstOwner(req);
      const id = req.params.id.slice(0, 64);
      await services.accounts.setPlanAsAdministrator(req.dashboard.account.id, id, formOf(req).plan ?? '');
      return redirectWith(reply, SECTION, 'plan-changed');
    });
  },
};

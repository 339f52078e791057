import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { SafeHtml } from '../../http/html.ts';
import type { Notice } from '../../http/web/notice.ts';
import { sendPage } from '../../http/web/pages.ts';
import type { Area } from '../../core/access.ts';
import type { Principal } from '../../core/principal.ts';
import type { Services } from '../../services.ts';
import type { Account } from '../accounts/service.ts';
import type { Member } from '../members/service.ts';
import type { DashboardSession, SignedIn } from './service.ts';
import { confirmPage, type NavEntry, page, type Viewer } from './views.ts';

/** Who is signed in, set on every request of the signed-in pages before their handler runs. */
export interface DashboardContext {
  principal: Principal;
  account: Account;
  /** Who signed in (the account's first owner, or an invited member), with their role as it is now. */
  member: Member;
  session: DashboardSession;
  viewer: Viewer;
}

declare module 'fastify' {
  interface FastifyRequest {
    dashboard: DashboardContext;
  }
  interface FastifyContextConfig {
    /** The area a dashboard route touches, when not its screen's (core/access.ts). */
    area?: Area;
  }
}

export interface ScreenOptions {
  services: Services;
  /** Puts a new session in this browser's cookie (after a password change). */
  setSession: (reply: FastifyReply, signedIn: SignedIn) => FastifyReply;
  /** preHandler of a form that checks the account's password: counts the attempt, 429 past the limit. */
  passwordLimit: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

/**
 * One screen of the dashboard: its routes, its place in the navigation and the notices its
 * redirects may show. Adding a screen is one file exporting this and one line in `screens.ts`.
 */
export interface Screen {
  /**
   * What the screen's routes touch: a member's role is checked against it before any handler runs
   * (GET reads, every other method writes; core/access.ts). A route touching another area says so
   * in its own `config: { area }`.
   */
  area: Area;
  nav?: NavEntry;
  /** Fixed texts a redirect may ask for by code (`?notice=code`): never text from the URL. */
  notices?: Record<string, Notice>;
  routes: FastifyPluginAsync<ScreenOptions>;
}

/** Every screen's notices, merged when the screens are registered. */
export const NOTICES = new Map<string, Notice>();

/** Sends a signed-in page: the layout, the section marked in the navigation, and the notice a redirect asked for. */
export function render(req: FastifyRequest, reply: FastifyReply, o: { status?: number; title: string; section: string; content: SafeHtml; notice?: Notice }): FastifyReply {
  const code = (req.query as { notice?: unknown } | undefined)?.notice;
  const notice = o.notice ?? (typeof code === 'string' ? NOTICES.get(code) : undefined);
  return sendPage(reply, o.status ?? 200, page({ title: o.title, content: o.content, viewer: req.dashboard.viewer, section: o.section, notice }));
}

/** After a change: back to a page, with a notice (Post/Redirect/Get). */
export const redirectWith = (reply: FastifyReply, url: string, notice: string) => reply.redirect(`${url}${url.includes('?') ? '&' : '?'}notice=${notice}`, 303);

/** The body of an urlencoded form. */
export const formOf = (req: FastifyRequest) => (req.body ?? {}) as Record<string, string | undefined>;

/** Whether a destructive action's POST comes from its confirmation page. */
export const confirmed = (req: FastifyRequest) => formOf(req).confirm === 'yes';

/** Answers the confirmation page of a destructive action (see views.confirmPage). */
export function askFirst(req: FastifyRequest, reply: FastifyReply, o: Omit<Parameters<typeof confirmPage>[0], 'viewer'>): FastifyReply {
  return sendPage(reply, 200, confirmPage({ ...o, viewer: req.dashboard.viewer }));
}

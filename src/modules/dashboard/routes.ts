import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { normalizeEmail } from '../../core/email.ts';
import { actionOf, type Area, requireAccess } from '../../core/access.ts';
import { AppError } from '../../core/errors.ts';
import { cookie, readCookie } from '../../http/web/cookies.ts';
import { CsrfCookie } from '../../http/web/csrf-cookie.ts';
import type { Csrf } from '../../http/web/csrf.ts';
import type { Notice } from '../../http/web/notice.ts';
import { sendPage as send, webPages } from '../../http/web/pages.ts';
import type { Services } from '../../services.ts';
import type { Account } from '../accounts/service.ts';
import { IMAGE_MAX_BYTES } from '../product-images/service.ts';
import { DASHBOARD_CSS, DASHBOARD_JS } from './assets.ts';
import { accountFormPage, codePage, emailConfirmPage, forgotPage, invitationPage, loginPage, messagePage, resetPage } from './auth-pages.ts';
import { fieldErrors, type FormBody } from './forms.ts';
import { NOTICES } from './screen.ts';
import { SCREENS } from './screens.ts';
import { dashboardPrincipal, type SignedIn } from './service.ts';
import { emptyForm, NAV } from './views.ts';

/** A signed-in dashboard route and the area its role check uses. */
export interface SignedInRoute {
  method: string;
  url: string;
  area: Area | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every signed-in dashboard route (the root app decorates it; tests enumerate it). */
    signedInRoutes: SignedInRoute[];
  }
  interface FastifyContextConfig {
    /** The route takes a multipart/form-data upload (a dashboard form with a file). */
    multipart?: boolean;
  }
}

export interface DashboardLimits {
  enabled: boolean;
  /** Every dashboard page, per client address and minute. */
  perClientPerMinute: number;
  /**
   * Log-in and reset requests per 15 minutes: per (e-mail address, client address), so a stranger
   * spends their own quota and never the owner's; per e-mail address from all clients together (a
   * high cap against guessing from many addresses); and per client address.
   */
  loginsPerAddress: number;
  loginsAllClientsPerAddress: number;
  loginsPerClient: number;
}

export interface DashboardRouteOptions {
  services: Services;
  csrf: Csrf;
  secureCookies: boolean;
  signupOpen: boolean;
  limits: DashboardLimits;
}

const SESSION_COOKIE = 'tessera_dashboard';
const CSRF_COOKIE = 'tessera_dashboard_csrf';
/** A password accepted, a two-factor code awaited: the challenge's secret (5 minutes). */
const CHALLENGE_COOKIE = 'tessera_dashboard_2fa';
/** Where a member whose account requires two-factor sign-in goes until they have set it up. */
const TWO_FACTOR_PAGE = '/dashboard/account/two-factor';
const FORM_LIMIT = 64 * 1024;
const MINUTE = 60_000;
const SESSION_COOKIE_MAX_AGE = 30 * 24 * 3600; // the server ends idle sessions after 7 days; the cookie only outlives them

const AUTH_NOTICES = new Map<string | undefined, Notice>([
  ['signed-out', { tone: 'ok', text: 'You are logged out.' }],
  ['session-ended', { tone: 'warn', text: 'Your session has ended. Log in again to continue.' }],
  ['password-reset', { tone: 'ok', text: 'Your password is changed. Log in with the new one.' }],
  ['code-expired', { tone: 'warn', text: 'That sign-in expired or had too many wrong codes. Log in again.' }],
]);

/** What a browser gets for an address nothing answers (outside the portal): a page, with a way back. */
export const dashboardNotFoundPage = () =>
  messagePage({ title: 'Page not found', text: 'There is no page at this address. It may have moved, or the link may be mistyped.', action: { text: 'Go to the dashboard', href: '/dashboard' } });

/** Only a path inside the dashboard: never another site (no open redirect). */
const safeNext = (next: unknown): string | undefined =>
  typeof next === 'string' && /^\/dashboard(\/[A-Za-z0-9_\-./?=&%]*)?$/.test(next) && !next.includes('//') ? next : undefined;

/**
 * The operator dashboard: server-rendered pages on the web kit (the portal's stack), usable
 * without JavaScript. Sign-in pages are open; every other page needs a session, and every POST
 * there a CSRF token bound to that session.
 */
export const dashboardRoutes: FastifyPluginAsync<DashboardRouteOptions> = async (app, { services, csrf, secureCookies, signupOpen, limits }) => {
  const auth = services.dashboard;
  // HTML pages, not API: none of them goes in the OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  webPages(app, {
    name: 'dashboard',
    assetsPrefix: '/dashboard/assets/',
    formLimit: FORM_LIMIT,
    errorPage: (status) =>
      status === 403
        ? messagePage({ title: 'Not allowed', text: 'Your role in this account does not allow this. An owner can change your role.', action: { text: 'Back to the dashboard', href: '/dashboard' } })
        : status === 404
        ? messagePage({ title: 'Not found', text: 'There is nothing here, or it belongs to another account.', action: { text: 'Back to the dashboard', href: '/dashboard' } })
        : status === 429
          ? messagePage({ title: 'Too many requests', text: 'Please wait a few minutes and try again.', action: { text: 'Back to the dashboard', href: '/dashboard' } })
          : status === 413
            ? messagePage({ title: 'That was too large', text: 'The upload is larger than allowed. Images can be at most 1 MiB.', action: { text: 'Back to the dashboard', href: '/dashboard' } })
            : status >= 500
              ? messagePage({ title: 'Something went wrong', text: 'We could not complete that. Please try again in a moment.', action: { text: 'Back to the dashboard', href: '/dashboard' } })
              : messagePage({ title: 'That did not work', text: 'The request was not understood. Go back and try again.', action: { text: 'Back to the dashboard', href: '/dashboard' } }),
  });
  // Multipart bodies are parsed before any handler, fields and file alike (the file as a Buffer, at
  // most 1 MiB), so the CSRF check below reads a multipart form's token as it reads any form's. Only
  // a route that takes an upload (`config.multipart`) accepts one: anywhere else it is a 415 before
  // its parts are read.
  await app.register(multipart, { attachFieldsToBody: 'keyValues', limits: { fileSize: IMAGE_MAX_BYTES, files: 1, fields: 4, fieldSize: 512, parts: 5 } });
  app.addHook('onRequest', async (req) => {
    if (req.routeOptions.config.multipart !== true && /^\s*multipart\//i.test(req.headers['content-type'] ?? '')) throw new AppError('unsupported_media_type', 'This form takes no upload.');
  });

  const csrfCookie = new CsrfCookie(csrf, CSRF_COOKIE, { path: '/dashboard', secure: secureCookies });
  const sessionCookie = (value: string, maxAge: number) => cookie(SESSION_COOKIE, value, { path: '/dashboard', secure: secureCookies, maxAge });
  const challengeCookie = (value: string, maxAge: number) => cookie(CHALLENGE_COOKIE, value, { path: '/dashboard', secure: secureCookies, maxAge });
  const setSession = (reply: FastifyReply, signedIn: SignedIn) => reply.header('set-cookie', sessionCookie(signedIn.token, SESSION_COOKIE_MAX_AGE));
  const signIn = (reply: FastifyReply, signedIn: SignedIn, next = '/dashboard') => setSession(reply, signedIn).redirect(next, 303);

  type LimitConfig = { rateLimit: { max: number; timeWindow: number } };
  const pageLimit = (limits.enabled ? { rateLimit: { max: limits.perClientPerMinute, timeWindow: MINUTE } } : {}) as LimitConfig;
  const loginWindow = 15 * MINUTE;
  // Three counters on the sign-in forms, all kept by @fastify/rate-limit (so in Redis when it is).
  // Per client: the route's limit, on the request.
  const loginLimit = (limits.enabled ? { rateLimit: { max: limits.loginsPerClient, timeWindow: loginWindow } } : {}) as LimitConfig;
  // Per address: asked once the body is parsed, through createRateLimit (the plugin's store), since
  // the plugin runs only one route limit per request. Counted per (address, client), as the portal's
  // links are: a stranger's wrong passwords use up the stranger's quota, and the operator, from their
  // own client, still gets in; the all-clients cap, far higher, bounds guessing from many clients.
  const addressOf = (req: FastifyRequest) => normalizeEmail(String((req.body as FormBody | undefined)?.email ?? ''));
  const perAddress = limits.enabled
    ? app.createRateLimit({ max: limits.loginsPerAddress, timeWindow: loginWindow, keyGenerator: (req) => `dashboard-login:${addressOf(req)}|${req.ip}` })
    : undefined;
  const perAddressAllClients = limits.enabled
    ? app.createRateLimit({ max: limits.loginsAllClientsPerAddress, timeWindow: loginWindow, keyGenerator: (req) => `dashboard-login:${addressOf(req)}` })
    : undefined;
  // The account page's forms check the password too: per account, with log-in's per-address size,
  // so a stolen session cookie cannot guess the password at the page limit's pace.
  const perAccount = limits.enabled
    ? app.createRateLimit({ max: limits.loginsPerAddress, timeWindow: loginWindow, keyGenerator: (req) => `dashboard-password:${req.dashboard.account.id}` })
    : undefined;
  const counted = (limiter: typeof perAddress, message: string) => async (req: FastifyRequest, reply: FastifyReply) => {
    const result = limiter && (await limiter(req));
    if (!result || result.isAllowed || !result.isExceeded) return;
    void reply
      .header('ratelimit-limit', String(result.max))
      .header('ratelimit-remaining', '0')
      .header('ratelimit-reset', String(result.ttlInSeconds))
      .header('retry-after', String(result.ttlInSeconds));
    throw new AppError('rate_limited', message);
  };
  const ownQuota = counted(perAddress, 'Too many attempts for this address from this client.');
  const allClientsQuota = counted(perAddressAllClients, 'Too many attempts for this address.');
  const addressLimit = async (req: FastifyRequest, reply: FastifyReply) => {
    await ownQuota(req, reply);
    await allClientsQuota(req, reply);
  };
  const passwordLimit = counted(perAccount, 'Too many password attempts for this account.');

  const refused = (reply: FastifyReply, back: string) =>
    send(reply, 403, messagePage({ title: 'This form has expired', text: 'For your security the form could not be accepted. Go back, reload the page and try again.', action: { text: 'Reload', href: back } }));
  const form = (req: FastifyRequest) => (req.body ?? {}) as FormBody;

  // The service's own address leads to the dashboard (which sends a visitor on to log in or set up).
  app.get('/', async (_req, reply) => reply.redirect('/dashboard', 302));

  app.get('/dashboard/assets/dashboard.css', async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(DASHBOARD_CSS),
  );
  app.get('/dashboard/assets/dashboard.js', async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(DASHBOARD_JS),
  );

  // First run: the setup page until an account exists, then never again.
  for (const kind of ['setup', 'signup'] as const) {
    const allowed = async () => (kind === 'setup' ? auth.needsSetup() : signupOpen);
    app.get(`/dashboard/${kind}`, { config: pageLimit }, async (req, reply) => {
      if (!(await allowed())) return reply.redirect('/dashboard/login', 303);
      return send(reply, 200, accountFormPage({ kind, form: emptyForm(), csrf: csrfCookie.token(req, reply) }));
    });
    app.post(`/dashboard/${kind}`, { config: loginLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
      if (!(await allowed())) return reply.redirect('/dashboard/login', 303);
      const body = form(req);
      if (!csrfCookie.verify(req, body.csrf)) return refused(reply, `/dashboard/${kind}`);
      const email = (body.email ?? '').trim();
      try {
        return signIn(reply, kind === 'setup' ? await auth.setUp(email, body.password ?? '') : await auth.signUp(email, body.password ?? ''));
      } catch (error) {
        // Another setup finished first: this visitor is now just a late one.
        if (error instanceof AppError && error.code === 'not_found') return reply.redirect('/dashboard/login', 303);
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return send(reply, 400, accountFormPage({ kind, form: { values: { email }, errors }, csrf: csrfCookie.token(req, reply) }));
      }
    });
  }

  app.get('/dashboard/login', { config: pageLimit }, async (req, reply) => {
    if (await auth.needsSetup()) return reply.redirect('/dashboard/setup', 303);
    const q = req.query as { next?: string; notice?: string };
    const page = loginPage({ form: emptyForm(), csrf: csrfCookie.token(req, reply), next: safeNext(q.next), signupOpen, notice: AUTH_NOTICES.get(q.notice) });
    return send(reply, 200, page);
  });

  app.post('/dashboard/login', { config: loginLimit, preHandler: addressLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const body = form(req);
    if (!csrfCookie.verify(req, body.csrf)) return refused(reply, '/dashboard/login');
    const email = (body.email ?? '').trim();
    const signedIn = email && body.password ? await auth.logIn(email, body.password) : undefined;
    if (signedIn && 'challenge' in signedIn) {
      const next = safeNext(body.next);
      void reply.header('set-cookie', challengeCookie(signedIn.challenge, 300));
      return reply.redirect(`/dashboard/login/code${next ? `?next=${encodeURIComponent(next)}` : ''}`, 303);
    }
    if (signedIn) return signIn(reply, signedIn, safeNext(body.next));
    // One message whether or not the address has an account.
    const page = loginPage({
      form: { values: { email }, errors: { _form: 'The e-mail address or the password is not right.' } },
      csrf: csrfCookie.token(req, reply),
      next: safeNext(body.next),
      signupOpen,
    });
    return send(reply, 401, page);
  });

  app.get('/dashboard/login/code', { config: pageLimit }, async (req, reply) => {
    if (!readCookie(req.headers.cookie, CHALLENGE_COOKIE)) return reply.redirect('/dashboard/login', 303);
    return send(reply, 200, codePage({ form: emptyForm(), csrf: csrfCookie.token(req, reply), next: safeNext((req.query as { next?: string }).next) }));
  });

  // Codes are limited three ways: 5 per challenge (then the password again), the password's own
  // limits on challenges, and this route's per-client limit.
  app.post('/dashboard/login/code', { config: loginLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const body = form(req);
    if (!csrfCookie.verify(req, body.csrf)) return refused(reply, '/dashboard/login');
    const challenge = readCookie(req.headers.cookie, CHALLENGE_COOKIE);
    const answer = challenge && challenge.length <= 128 ? await auth.answerChallenge(challenge, (body.code ?? '').slice(0, 40)) : 'dead';
    if (answer === 'dead') return reply.header('set-cookie', challengeCookie('', 0)).redirect('/dashboard/login?notice=code-expired', 303);
    if (answer === 'wrong') {
      const page = codePage({ form: { values: {}, errors: { code: 'This code is not right, or was used already.' } }, csrf: csrfCookie.token(req, reply), next: safeNext(body.next) });
      return send(reply, 401, page);
    }
    void reply.header('set-cookie', challengeCookie('', 0));
    return signIn(reply, answer, safeNext(body.next));
  });

  app.get('/dashboard/forgot', { config: pageLimit }, async (req, reply) =>
    send(reply, 200, forgotPage({ form: emptyForm(), csrf: csrfCookie.token(req, reply) })),
  );

  app.post('/dashboard/forgot', { config: loginLimit, preHandler: addressLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const body = form(req);
    if (!csrfCookie.verify(req, body.csrf)) return refused(reply, '/dashboard/forgot');
    const email = (body.email ?? '').trim();
    try {
      await auth.requestReset(email);
    } catch (error) {
      const errors = fieldErrors(error);
      if (!errors) throw error;
      return send(reply, 400, forgotPage({ form: { values: { email }, errors }, csrf: csrfCookie.token(req, reply) }));
    }
    // The same answer whether or not the address has an account.
    const notice: Notice = { tone: 'ok', text: `If ${email} has an account, a link to reset its password is on its way. It works once, for 1 hour.` };
    return send(reply, 200, forgotPage({ form: emptyForm({ email }), csrf: csrfCookie.token(req, reply), notice }));
  });

  const deadLink = () =>
    messagePage({ title: 'This link does not work', text: 'Reset links work once, for 1 hour. Ask for a new one.', action: { text: 'Ask for a new link', href: '/dashboard/forgot' } });

  app.get('/dashboard/reset', { config: pageLimit }, async (req, reply) => {
    const token = (req.query as { token?: unknown }).token;
    if (typeof token !== 'string' || token.length > 128 || !(await auth.resetLinkValid(token))) return send(reply, 400, deadLink());
    return send(reply, 200, resetPage({ form: emptyForm(), csrf: csrfCookie.token(req, reply), token }));
  });

  app.post('/dashboard/reset', { config: loginLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const body = form(req);
    if (!csrfCookie.verify(req, body.csrf)) return refused(reply, '/dashboard/forgot');
    const token = (body.token ?? '').slice(0, 128);
    let done: boolean;
    try {
      done = await auth.resetPassword(token, body.password ?? '');
    } catch (error) {
      const errors = fieldErrors(error);
      if (!errors) throw error;
      return send(reply, 400, resetPage({ form: { values: {}, errors }, csrf: csrfCookie.token(req, reply), token }));
    }
    if (!done) return send(reply, 400, deadLink());
    return reply.header('set-cookie', sessionCookie('', 0)).redirect('/dashboard/login?notice=password-reset', 303);
  });

  // The new address's confirmation link: open like the reset link (it may be opened in another browser).
  const deadEmailLink = () =>
    messagePage({
      title: 'This link does not work',
      text: 'Confirmation links work once, for 1 hour. Ask for a new one on your account page.',
      action: { text: 'Go to your account', href: '/dashboard/account' },
    });

  app.get('/dashboard/email/confirm', { config: pageLimit }, async (req, reply) => {
    const token = (req.query as { token?: unknown }).token;
    const change = typeof token === 'string' && token.length <= 128 ? await auth.emailChangeFor(token) : undefined;
    if (!change) return send(reply, 400, deadEmailLink());
    return send(reply, 200, emailConfirmPage({ csrf: csrfCookie.token(req, reply), token: token as string, newEmail: change.newEmail }));
  });

  app.post('/dashboard/email/confirm', { config: loginLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const body = form(req);
    if (!csrfCookie.verify(req, body.csrf)) return refused(reply, '/dashboard/account');
    let account: Account | undefined;
    try {
      account = await auth.confirmEmailChange((body.token ?? '').slice(0, 128));
    } catch (error) {
      if (!fieldErrors(error)) throw error;
      return send(reply, 409, messagePage({ title: 'This address is taken', text: 'Another account uses this e-mail address now, so yours stays as it was.', action: { text: 'Go to your account', href: '/dashboard/account' } }));
    }
    if (!account) return send(reply, 400, deadEmailLink());
    return send(reply, 200, messagePage({ title: 'Your e-mail address is changed', text: `You sign in as ${account.email} from now on.`, action: { text: 'Go to the dashboard', href: '/dashboard' } }));
  });

  app.post('/dashboard/logout', { config: pageLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const token = readCookie(req.headers.cookie, SESSION_COOKIE);
    const current = token ? await auth.session(token) : undefined;
    if (current && !csrfCookie.verify(req, form(req).csrf, current.session.id)) return refused(reply, '/dashboard');
    if (token && current) await auth.logOut(token);
    return reply.header('set-cookie', sessionCookie('', 0)).redirect('/dashboard/login?notice=signed-out', 303);
  });

  // An invitation's link: open like the reset link (the invitee has no sign-in yet).
  const deadInvitation = () =>
    messagePage({ title: 'This invitation does not work', text: 'Invitations work once, for 7 days. Ask the person who invited you for a new one.', action: { text: 'Go to log in', href: '/dashboard/login' } });

  app.get('/dashboard/invitation', { config: pageLimit }, async (req, reply) => {
    const token = (req.query as { token?: unknown }).token;
    const invitation = typeof token === 'string' && token.length <= 128 ? await services.members.invitationFor(token) : undefined;
    if (!invitation) return send(reply, 400, deadInvitation());
    return send(reply, 200, invitationPage({ form: emptyForm(), csrf: csrfCookie.token(req, reply), token: token as string, email: invitation.email, role: invitation.role }));
  });

  app.post('/dashboard/invitation', { config: loginLimit, bodyLimit: FORM_LIMIT }, async (req, reply) => {
    const body = form(req);
    if (!csrfCookie.verify(req, body.csrf)) return refused(reply, '/dashboard/login');
    const token = (body.token ?? '').slice(0, 128);
    const invitation = await services.members.invitationFor(token);
    if (!invitation) return send(reply, 400, deadInvitation());
    try {
      const signedIn = await auth.acceptInvitation(token, body.password ?? '');
      if (!signedIn) return send(reply, 400, deadInvitation());
      return signIn(reply, signedIn);
    } catch (error) {
      const errors = fieldErrors(error);
      if (!errors) throw error;
      const page = invitationPage({ form: { values: {}, errors }, csrf: csrfCookie.token(req, reply), token, email: invitation.email, role: invitation.role });
      return send(reply, 400, page);
    }
  });

  for (const screen of SCREENS) {
    if (screen.nav && !NAV.some((n) => n.href === screen.nav!.href)) NAV.push({ ...screen.nav, area: screen.area });
    for (const [code, notice] of Object.entries(screen.notices ?? {})) NOTICES.set(code, notice);
  }

  await app.register(async (signedIn: FastifyInstance) => {
    signedIn.decorateRequest('dashboard', null as never);
    if (limits.enabled) {
      signedIn.addHook('onRequest', signedIn.rateLimit({ max: limits.perClientPerMinute, timeWindow: MINUTE, keyGenerator: (req) => `dashboard:${req.ip}` }));
    }
    signedIn.addHook('onRequest', async (req, reply) => {
      if (req.url.startsWith('/dashboard/assets/')) return;
      const token = readCookie(req.headers.cookie, SESSION_COOKIE);
      const current = token ? await auth.session(token) : undefined;
      if (!current) {
        if (await auth.needsSetup()) return reply.redirect('/dashboard/setup', 303);
        const next = req.method === 'GET' ? safeNext(req.url) : undefined;
        const notice = token ? 'notice=session-ended' : '';
        const query = [next && `next=${encodeURIComponent(next)}`, notice].filter(Boolean).join('&');
        return reply.redirect(`/dashboard/login${query ? `?${query}` : ''}`, 303);
      }
      const principal = dashboardPrincipal(current.member);
      req.dashboard = {
        principal,
        account: current.account,
        member: current.member,
        session: current.session,
        viewer: { email: current.member.email, csrf: csrfCookie.token(req, reply, current.session.id), access: principal.access },
      };
      // The one role check of every signed-in page and action, before its body is read: the area
      // its screen (or the route itself) names, read for GET, write for anything else.
      if (req.is404) return;
      requireAccess(principal.access, req.routeOptions.config.area, actionOf(req.method));
      // An account that requires two-factor sign-in lets a member without it only set it up.
      if (!(req.routeOptions.url ?? '').startsWith(TWO_FACTOR_PAGE) && (await services.twoFactor.isRequired(principal.accountId)) && !(await services.twoFactor.isEnabled(current.member.id))) {
        if (req.method !== 'GET') throw new AppError('insufficient_scope', 'Set up two-factor sign-in first.');
        return reply.redirect(`${TWO_FACTOR_PAGE}?notice=two-factor-required`, 303);
      }
    });
    // Every request that may change something carries the token bound to this session, whatever its
    // body's type (urlencoded, multipart, JSON); without one the handler never runs.
    signedIn.addHook('preHandler', async (req, reply) => {
      if (req.method === 'GET' || req.method === 'HEAD') return;
      if (!csrfCookie.verify(req, form(req).csrf, req.dashboard.session.id)) return refused(reply, req.url);
    });
    for (const screen of SCREENS) {
      await signedIn.register(async (scope) => {
        // A screen's routes touch its area unless a route names another.
        scope.addHook('onRoute', (route) => {
          route.config = { area: screen.area, ...route.config };
          for (const method of [route.method].flat()) if (method !== 'HEAD') app.signedInRoutes.push({ method, url: route.url, area: route.config.area });
        });
        await scope.register(screen.routes, { services, setSession, passwordLimit });
      });
    }
  });
};

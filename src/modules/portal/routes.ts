import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../core/errors.ts';
import { normalizeLicenseKey } from '../../core/license-key.ts';
import { toIso } from '../../core/time.ts';
import { Email, errorResponses } from '../../http/schema-helpers.ts';
import { formatDate } from '../mail/format.ts';
import { PORTAL_CSS, PORTAL_JS } from './assets.ts';
import { cookie as webCookie, readCookie } from '../../http/web/cookies.ts';
import type { Csrf } from '../../http/web/csrf.ts';
import { CsrfCookie } from '../../http/web/csrf-cookie.ts';
import { type PageBrand, sendPage as send, webPages } from '../../http/web/pages.ts';
import { accentStylesheet, type Branding, type BrandingService, brandLogoPath, brandStylesheetPath } from '../branding/service.ts';
import { sendImage } from '../product-images/image.ts';
import { devicesPage, invalidLinkPage, messagePage, type Notice, portalPage, requestPage, resetConfirmPage } from './pages.ts';
import type { PortalScope, PortalService, TokenRecord } from './service.ts';

/** Invoices of purchases (the payments module): which licenses have one, and the buyer's download. */
export interface PortalInvoices {
  /** license key → purchase id, for the licenses in `scope` whose purchase has an invoice. */
  invoicedPurchases(scope: PortalScope, licenseKeys: string[]): Promise<Map<string, string>>;
  /** The invoice fetched from the provider now; 404 unless the purchase is the scope's own. */
  customerInvoice(scope: PortalScope, purchaseId: string): Promise<{ invoicePdf: string }>;
}

/** Subscriptions (the payments module): which licenses follow one, and its billing portal for the customer. */
export interface PortalBilling {
  managedSubscriptions(scope: PortalScope, licenseKeys: string[]): Promise<Set<string>>;
  /** The provider's billing-portal address, made now; 404 unless the license is the scope's own and follows a subscription. */
  billingPortal(scope: PortalScope, licenseKey: string, returnUrl: string): Promise<string>;
  /** license key → the renewals and upgrades it qualifies for now. */
  customerOffers(scope: PortalScope, licenseKeys: string[]): Promise<Map<string, { id: string; kind: 'renewal' | 'upgrade'; name: string }[]>>;
  /** The provider's checkout page for the offer, made now; 404 unless the license is the scope's own and qualifies. */
  offerCheckout(scope: PortalScope, licenseKey: string, offerId: string, portalUrl: string): Promise<string>;
}

export interface PortalLimits {
  enabled: boolean;
  /** Every portal page, per client address. */
  perClientPerMinute: number;
  /** Link requests per client address. */
  linksPerClientPerHour: number;
  /** Link requests per (e-mail address, client address), counted in the database (every process shares it). */
  linksPerAddressPerClientPerHour: number;
  /** Link requests per e-mail address from all clients together: a high cap against mailbox floods. */
  linksPerAddressPerHour: number;
}

export interface PortalRouteOptions {
  portal: PortalService;
  csrf: Csrf;
  secureCookies: boolean;
  limits: PortalLimits;
  invoices?: PortalInvoices;
  billing?: PortalBilling;
  /** BASE_URL: where the provider's billing portal sends the customer back. */
  baseUrl?: string;
  /** Vendors' branding: the portal's header, and the logo and accent stylesheet it serves. */
  branding?: Pick<BrandingService, 'get' | 'logo'>;
}

/** An account's branding as the portal's header shows it; undefined when it set none. */
export function pageBrandOf(b: Branding): PageBrand | undefined {
  if (!b.displayName && !b.logo && !b.accentColor) return undefined;
  return { name: b.displayName ?? 'License portal', logo: brandLogoPath(b), stylesheet: brandStylesheetPath(b) };
}

const SESSION_COOKIE = 'tessera_portal';
const CSRF_COOKIE = 'tessera_csrf';
const FORM_LIMIT = 4096;
/**
 * Where the portal's offer and "Manage subscription" forms send the customer (a 303 to the
 * provider's hosted Checkout or billing portal): the page's CSP must let its forms redirect there,
 * or the browser stops at the portal. A provider added later adds its hosted pages' origin here
 * (Lemon Squeezy's checkout and customer portal are on each store's own {store}.lemonsqueezy.com;
 * Polar's on polar.sh, and sandbox.polar.sh for sandbox organizations).
 */
const PROVIDER_PAGES = ['https://checkout.stripe.com', 'https://billing.stripe.com', 'https://*.lemonsqueezy.com', 'https://polar.sh', 'https://sandbox.polar.sh'];
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;


/** Notices a redirect may ask for: fixed texts chosen by code, never text from the URL. */
const NOTICES = new Map<string | undefined, Notice>([
  ['reset', { tone: 'ok', text: 'Devices reset. You can now activate the license on another device.' }],
  ['no-devices', { tone: 'warn', text: 'That license has no devices to reset.' }],
  ['device-removed', { tone: 'ok', text: 'Device removed. You can now activate the license on another device.' }],
  ['signed-out', { tone: 'ok', text: 'You are signed out.' }],
  ['session-ended', { tone: 'warn', text: 'Your portal session has ended. Ask for a new link to continue.' }],
  ['offer-paid', { tone: 'ok', text: 'Thank you! Your license is updated as soon as the payment is confirmed; an e-mail follows.' }],
]);

const RequestQuery = Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })), notice: Type.Optional(Type.String({ maxLength: 32 })) });
const PortalQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })), notice: Type.Optional(Type.String({ maxLength: 32 })) });
const RequestForm = Type.Object({ email: Type.String({ maxLength: 320 }), csrf: Type.Optional(Type.String({ maxLength: 128 })) });
const ResetForm = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 64 }),
  /** One device to remove; none: every device. */
  device: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  confirm: Type.Optional(Type.String({ maxLength: 8 })),
  csrf: Type.Optional(Type.String({ maxLength: 128 })),
});
const DevicesParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) });
const DevicesQuery = Type.Object({ page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$' })) });
const InvoiceParams = Type.Object({ purchaseId: Type.String({ minLength: 1, maxLength: 64 }) });
const OfferForm = Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }), offerId: Type.String({ minLength: 1, maxLength: 64 }), csrf: Type.Optional(Type.String({ maxLength: 128 })) });
const CsrfForm = Type.Object({ csrf: Type.Optional(Type.String({ maxLength: 128 })) });

/**
 * The customer portal: server-rendered pages that work without JavaScript. Every form carries a
 * CSRF token; sessions live in HttpOnly cookies; errors are pages, never JSON or stack traces.
 */
export const portalRoutes: FastifyPluginAsyncTypebox<PortalRouteOptions> = async (app, { portal, csrf, secureCookies, limits, invoices, billing, baseUrl, branding }) => {
  webPages(app, {
    name: 'portal',
    assetsPrefix: '/portal/assets/',
    formRedirects: PROVIDER_PAGES,
    formLimit: FORM_LIMIT,
    errorPage: (status) =>
      status === 429
        ? messagePage({ title: 'Too many requests', text: 'Please wait a little and try again.', action: { text: 'Back to the portal', href: '/portal/request' } })
        : status >= 500
          ? messagePage({ title: 'Something went wrong', text: 'We could not complete that. Please try again in a moment.', action: { text: 'Try again', href: '/portal/request' } })
          : messagePage({ title: 'That did not work', text: 'The request was not understood. Start again from the portal.', action: { text: 'Back to the portal', href: '/portal/request' } }),
  });
  const cookie = (name: string, value: string, options: { secure: boolean; maxAge?: number }) => webCookie(name, value, { ...options, path: '/portal' });

  // The shape @fastify/rate-limit reads from a route's config; an empty config means no limit.
  type LimitConfig = { rateLimit: { max: number; timeWindow: number } };
  const limit = (max: number, timeWindow: number) => (limits.enabled ? { rateLimit: { max, timeWindow } } : {}) as LimitConfig;
  const pageLimit = limit(limits.perClientPerMinute, MINUTE);

  const csrfCookie = new CsrfCookie(csrf, CSRF_COOKIE, { path: '/portal', secure: secureCookies });
  /**
   * Tokens of signed-in pages are bound to the session (its stored id, the hash of its token, never
   * the cookie's value): a cookie/token pair issued to one visitor is no pair for another's session.
   */
  const binding = (session: TokenRecord | undefined) => session?.tokenHash ?? '';
  const csrfValid = (req: FastifyRequest, token: string | undefined, session?: TokenRecord) => csrfCookie.verify(req, token, binding(session));

  const csrfRefused = (reply: FastifyReply, back: string) =>
    send(
      reply,
      403,
      messagePage({ title: 'This form has expired', text: 'For your security the form could not be accepted. Go back, reload the page and try again.', action: { text: 'Reload', href: back } }),
    );

  async function currentSession(req: FastifyRequest): Promise<{ token: string; session: TokenRecord } | undefined> {
    const token = readCookie(req.headers.cookie, SESSION_COOKIE);
    const session = token ? await portal.session(token) : undefined;
    return token && session ? { token, session } : undefined;
  }

  async function renderPortal(req: FastifyRequest, reply: FastifyReply, status: number, session: TokenRecord, notice?: Notice) {
    const licenses = await portal.licenses(session);
    const invoiced = invoices ? await invoices.invoicedPurchases(session, licenses.map((l) => l.key)) : undefined;
    const subscribed = billing ? await billing.managedSubscriptions(session, licenses.map((l) => l.key)) : undefined;
    const offers = billing ? await billing.customerOffers(session, licenses.map((l) => l.key)) : undefined;
    const { brand, vendors } = await brandsOf(session, licenses);
    return send(
      reply,
      status,
      portalPage({ email: session.email, licenses, invoices: invoiced, subscriptions: subscribed, offers, csrf: csrfCookie.token(req, reply, binding(session)), notice, expiresAt: session.expiresAt, brand, vendors }),
    );
  }

  /**
   * Whose brand the page wears: a private session's account; else the one vendor whose licenses these
   * are. Licenses of several vendors (one e-mail address bought from more than one account of this
   * installation): the neutral header, and each card names its vendor (docs/branding.md).
   */
  async function brandsOf(scope: PortalScope, licenses: { accountId: string }[]): Promise<{ brand?: PageBrand; vendors?: Map<string, PageBrand> }> {
    if (!branding) return {};
    const accounts = scope.accountId !== null ? [scope.accountId] : [...new Set(licenses.map((l) => l.accountId))];
    if (accounts.length === 1) return { brand: pageBrandOf(await branding.get(accounts[0]!)) };
    const vendors = new Map<string, PageBrand>();
    for (const id of accounts) {
      const b = await branding.get(id);
      if (b.displayName) vendors.set(id, pageBrandOf(b)!);
    }
    return { vendors };
  }

  // A vendor's logo and accent, public like the portal's own assets (customers' browsers and mail clients load them).
  app.get<{ Params: { accountId: string } }>('/portal/assets/brand/:accountId/logo', { schema: { hide: true } }, async (req, reply) => {
    const image = branding && (await branding.logo(req.params.accountId.slice(0, 64)));
    if (!image) return reply.status(404).type('text/plain; charset=utf-8').send('Not found');
    return sendImage(req, reply, image);
  });
  app.get<{ Params: { accountId: string } }>('/portal/assets/brand/:accountId/accent.css', { schema: { hide: true } }, async (req, reply) => {
    const colour = branding && (await branding.get(req.params.accountId.slice(0, 64))).accentColor;
    if (!colour) return reply.status(404).type('text/plain; charset=utf-8').send('Not found');
    return reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(accentStylesheet(colour));
  });

  const sessionEnded = (reply: FastifyReply) => reply.redirect('/portal/request?notice=session-ended', 303);

  app.get('/portal/assets/portal.css', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(PORTAL_CSS),
  );
  app.get('/portal/assets/portal.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(PORTAL_JS),
  );

  app.get('/portal/request', { config: pageLimit, schema: { hide: true, querystring: RequestQuery } }, async (req, reply) => {
    const page = requestPage({ email: req.query.email ?? '', csrf: csrfCookie.token(req, reply), notice: NOTICES.get(req.query.notice) });
    return send(reply, 200, page);
  });

  // A limit counted in the database refused: its own headers, over those of the per-client route
  // limit (set before the body was read, and still under its size).
  const limitedUntil = (reply: FastifyReply, limit: number, until: number) => {
    const seconds = String(Math.max(1, Math.ceil((until - portal.now()) / 1000)));
    void reply.header('ratelimit-limit', String(limit)).header('ratelimit-remaining', '0').header('ratelimit-reset', seconds).header('retry-after', seconds);
  };

  app.post(
    '/portal/request',
    { config: limit(limits.linksPerClientPerHour, HOUR), bodyLimit: FORM_LIMIT, schema: { hide: true, body: RequestForm } },
    async (req, reply) => {
      if (!csrfValid(req, req.body.csrf)) return csrfRefused(reply, `/portal/request`);
      const email = req.body.email.trim();
      const again = (status: number, extra: { notice?: Notice; error?: string }) =>
        send(reply, status, requestPage({ email, csrf: csrfCookie.token(req, reply), ...extra }));
      let outcome: Awaited<ReturnType<PortalService['requestLink']>>;
      try {
        const linkLimits = { perClient: limits.linksPerAddressPerClientPerHour, perAddress: limits.linksPerAddressPerHour };
        outcome = await portal.requestLink(email, req.ip, limits.enabled ? linkLimits : null);
      } catch (error) {
        if (error instanceof AppError && error.code === 'invalid_request') return again(400, { error: 'Enter a valid e-mail address, like name@example.com.' });
        throw error;
      }
      if ('limitedUntil' in outcome) {
        limitedUntil(reply, outcome.limit, outcome.limitedUntil);
        const text =
          outcome.by === 'client'
            ? `You have requested too many links for this address. Try again after ${formatDate(outcome.limitedUntil)}.`
            : `Too many links were requested for this address. Try again after ${formatDate(outcome.limitedUntil)}.`;
        return again(429, { notice: { tone: 'bad', text } });
      }
      // The same answer whether or not the address has licenses.
      return again(200, { notice: { tone: 'ok', text: `If ${email} has licenses, a link to your portal is on its way. Check your inbox and spam folder.` } });
    },
  );

  app.get('/portal', { config: pageLimit, schema: { hide: true, querystring: PortalQuery } }, async (req, reply) => {
    if (req.query.token !== undefined) {
      const opened = await portal.openLink(req.query.token);
      if (!opened) return send(reply, 400, invalidLinkPage());
      const maxAge = Math.max(1, Math.floor((opened.expiresAt - portal.now()) / 1000));
      // The token leaves the address bar (and the history) at once.
      return reply.header('set-cookie', cookie(SESSION_COOKIE, opened.sessionToken, { secure: secureCookies, maxAge })).redirect('/portal', 303);
    }
    const current = await currentSession(req);
    if (!current) return req.headers.cookie?.includes(`${SESSION_COOKIE}=`) ? sessionEnded(reply) : reply.redirect('/portal/request', 303);
    return renderPortal(req, reply, 200, current.session, NOTICES.get(req.query.notice));
  });

  app.get('/portal/licenses/:key/devices', { config: pageLimit, schema: { hide: true, params: DevicesParams, querystring: DevicesQuery } }, async (req, reply) => {
    const current = await currentSession(req);
    if (!current) return sessionEnded(reply);
    const page = await portal.devicePage(current.session, req.params.key, Number(req.query.page ?? 1));
    if (!page) return send(reply, 404, messagePage({ title: 'Not found', text: 'That page of devices is not in your portal.', action: { text: 'Back to your licenses', href: '/portal' } }));
    return send(reply, 200, devicesPage({ ...page, brand: current.session.accountId !== null && branding ? pageBrandOf(await branding.get(current.session.accountId)) : undefined }));
  });

  app.post('/portal/licenses/reset', { config: pageLimit, bodyLimit: FORM_LIMIT, schema: { hide: true, body: ResetForm } }, async (req, reply) => {
    const current = await currentSession(req);
    if (!current) return sessionEnded(reply);
    if (!csrfValid(req, req.body.csrf, current.session)) return csrfRefused(reply, '/portal');
    if (req.body.confirm !== 'yes') {
      // Asked first, when there is something to reset and a reset left (else the outcome below says why not).
      const license = (await portal.licenses(current.session)).find((l) => l.key === normalizeLicenseKey(req.body.key));
      if (license && license.deviceCount > 0 && license.reset.allowed && license.reset.nextAt === null) {
        const device = req.body.device === undefined ? undefined : license.devices.find((d) => d.identifier === req.body.device);
        if (req.body.device !== undefined && !device) return renderPortal(req, reply, 404, current.session, { tone: 'bad', text: 'That device is not in your portal.' });
        return send(reply, 200, resetConfirmPage({ license, device, csrf: csrfCookie.token(req, reply, binding(current.session)) }));
      }
    }
    const result = await portal.resetDevices(current.session, req.body.key, req.body.device);
    switch (result.outcome) {
      case 'done':
        return reply.redirect(`/portal?notice=${req.body.device === undefined ? 'reset' : 'device-removed'}#license-${encodeURIComponent(normalizeLicenseKey(req.body.key))}`, 303);
      case 'nothing':
        return reply.redirect('/portal?notice=no-devices', 303);
      case 'not_found':
        return renderPortal(req, reply, 404, current.session, { tone: 'bad', text: 'That license is not in your portal.' });
      case 'forbidden':
        return renderPortal(req, reply, 403, current.session, { tone: 'bad', text: 'Device resets are not available for this product. Contact support for help.' });
      case 'limit':
        limitedUntil(reply, result.limit, result.nextAt);
        return renderPortal(req, reply, 429, current.session, {
          tone: 'bad',
          text: `You have used all device resets for this license for now. Next reset possible on ${formatDate(result.nextAt)}.`,
        });
    }
  });

  // The invoice is fetched from the provider at click time (its links expire), then the browser goes there.
  app.get('/portal/invoices/:purchaseId', { config: pageLimit, schema: { hide: true, params: InvoiceParams } }, async (req, reply) => {
    const current = await currentSession(req);
    if (!current) return sessionEnded(reply);
    try {
      if (!invoices) throw new AppError('not_found', 'Invoice not found.');
      const invoice = await invoices.customerInvoice(current.session, req.params.purchaseId);
      return reply.redirect(invoice.invoicePdf, 303);
    } catch (error) {
      if (error instanceof AppError && (error.code === 'not_found' || error.code === 'payments_not_connected')) {
        return renderPortal(req, reply, 404, current.session, { tone: 'bad', text: 'That invoice is not available in your portal.' });
      }
      throw error;
    }
  });

  // "Manage subscription": the provider's billing portal, opened now for this license's customer only.
  app.post('/portal/licenses/subscription', { config: pageLimit, bodyLimit: FORM_LIMIT, schema: { hide: true, body: ResetForm } }, async (req, reply) => {
    const current = await currentSession(req);
    if (!current) return sessionEnded(reply);
    if (!csrfValid(req, req.body.csrf, current.session)) return csrfRefused(reply, '/portal');
    try {
      if (!billing) throw new AppError('not_found', 'Subscription not found.');
      return reply.redirect(await billing.billingPortal(current.session, normalizeLicenseKey(req.body.key), `${baseUrl ?? ''}/portal`), 303);
    } catch (error) {
      if (error instanceof AppError && (error.code === 'not_found' || error.code === 'payments_not_connected')) {
        return renderPortal(req, reply, 404, current.session, { tone: 'bad', text: 'That subscription is not available in your portal.' });
      }
      if (error instanceof AppError && (error.code === 'provider_unavailable' || error.code === 'invalid_provider_key')) {
        return renderPortal(req, reply, 503, current.session, { tone: 'bad', text: 'The payment provider could not be reached. Please try again in a moment.' });
      }
      throw error;
    }
  });

  // A renewal or upgrade: a Checkout session made now for this license's customer, then the browser goes there.
  app.post('/portal/licenses/offer', { config: pageLimit, bodyLimit: FORM_LIMIT, schema: { hide: true, body: OfferForm } }, async (req, reply) => {
    const current = await currentSession(req);
    if (!current) return sessionEnded(reply);
    if (!csrfValid(req, req.body.csrf, current.session)) return csrfRefused(reply, '/portal');
    try {
      if (!billing) throw new AppError('not_found', 'Offer not found.');
      return reply.redirect(await billing.offerCheckout(current.session, normalizeLicenseKey(req.body.key), req.body.offerId, `${baseUrl ?? ''}/portal`), 303);
    } catch (error) {
      if (error instanceof AppError && (error.code === 'not_found' || error.code === 'payments_not_connected')) {
        return renderPortal(req, reply, 404, current.session, { tone: 'bad', text: 'That offer is not available for your license.' });
      }
      if (error instanceof AppError && (error.code === 'provider_unavailable' || error.code === 'invalid_provider_key')) {
        return renderPortal(req, reply, 503, current.session, { tone: 'bad', text: 'The payment provider could not be reached. Please try again in a moment.' });
      }
      throw error;
    }
  });

  app.post('/portal/logout', { config: pageLimit, bodyLimit: FORM_LIMIT, schema: { hide: true, body: CsrfForm } }, async (req, reply) => {
    const current = await currentSession(req);
    if (current && !csrfValid(req, req.body.csrf, current.session)) return csrfRefused(reply, '/portal');
    if (current) await portal.endSession(current.session);
    return reply.header('set-cookie', cookie(SESSION_COOKIE, '', { secure: secureCookies, maxAge: 0 })).redirect('/portal/request?notice=signed-out', 303);
  });
};

const PrivateSessionBody = Type.Object({ email: Email }, { additionalProperties: false });
const PrivateSessionReply = Type.Object({
  url: Type.String({ description: 'Open it to see the licenses of that address on your products.' }),
  expiresAt: Type.String({ description: 'ISO 8601 UTC; 12 hours from now.' }),
});

/** Server API: an operator opens the portal for a customer, limited to the operator's own products. */
export const portalApiRoutes: FastifyPluginAsyncTypebox<{ portal: PortalService }> = async (app, { portal }) => {
  app.post(
    '/portal/sessions/private',
    {
      schema: {
        tags: ['Portal'],
        security: [{ apiKey: [] }],
        operationId: 'create-private-portal-session',
        summary: 'Create a private portal session',
        description: "A portal link for an e-mail address, valid 12 hours, showing only the licenses of the calling account's products.",
        body: PrivateSessionBody,
        response: { 200: PrivateSessionReply, ...errorResponses(400, 401, 403) },
      },
    },
    async (req) => {
      const session = await portal.createPrivateSession(req.principal, req.body.email);
      return { url: session.url, expiresAt: toIso(session.expiresAt) };
    },
  );
};

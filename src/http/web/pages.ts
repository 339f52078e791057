import type { FastifyInstance, FastifyReply } from 'fastify';
import { toAppError } from '../errors.ts';
import { html, type SafeHtml } from '../html.ts';

/** What every server-rendered page scope (the portal, the dashboard) gets from the web kit. */
export interface WebPagesOptions {
  /** Paths of static assets: cacheable, no page headers. */
  assetsPrefix: string;
  /** Largest urlencoded form body, in bytes. */
  formLimit: number;
  /** The page shown for an error: its HTTP status decides which. Never a stack trace. */
  errorPage: (status: number) => string;
  /** Logged with an unexpected error. */
  name: string;
  /**
   * Origins besides this one that a form's answer may redirect to (a payment provider's hosted
   * checkout): browsers apply CSP `form-action` to a form's redirects too, and block the rest.
   */
  formRedirects?: readonly string[];
}

const cspWith = (formRedirects: readonly string[]) =>
  `default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action ${["'self'", ...formRedirects].join(' ')}; base-uri 'none'; frame-ancestors 'none'`;
const CSP = cspWith([]);

export const sendPage = (reply: FastifyReply, status: number, page: string) => reply.status(status).type('text/html; charset=utf-8').send(page);

/** The headers every page carries (a strict CSP, no framing, no caching), also outside a page scope. */
export const pageHeaders = (reply: FastifyReply, csp = CSP): FastifyReply =>
  reply.header('content-security-policy', csp).header('x-frame-options', 'DENY').header('cache-control', 'no-store');

/**
 * Registers, on an encapsulated page scope: the urlencoded form parser (bounded), security headers
 * on every answer (a strict CSP, no framing, no caching of pages), and errors as HTML pages.
 */
export function webPages(app: FastifyInstance, options: WebPagesOptions): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: options.formLimit }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  const csp = options.formRedirects?.length ? cspWith(options.formRedirects) : CSP;
  app.addHook('onSend', async (req, reply) => {
    void reply.header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    if (!req.url.startsWith(options.assetsPrefix)) {
      void pageHeaders(reply, csp);
    }
  });

  app.setErrorHandler((error, req, reply) => {
    const appError = toAppError(error as Parameters<typeof toAppError>[0]);
    if (appError.code === 'internal_error') req.log.error({ err: error }, `${options.name} error`);
    return sendPage(reply, appError.statusCode, options.errorPage(appError.statusCode));
  });
}

export interface LayoutOptions {
  title: string;
  /** Shown in the title bar and the header, e.g. "License portal". */
  site: string;
  /** Where the brand link goes. */
  home: string;
  stylesheet: string;
  script: string;
  content: SafeHtml;
  narrow?: boolean;
  /** Right side of the header (who is signed in, a sign-out form). */
  who?: SafeHtml;
  /** Site navigation under the header (the dashboard's sections). */
  nav?: SafeHtml;
  footer: string;
  /** A vendor's brand in place of `site` (the portal): its name, its logo's and accent stylesheet's paths. */
  brand?: PageBrand;
}

export interface PageBrand {
  name: string;
  logo: string | null;
  stylesheet: string | null;
}

/** The page frame every server-rendered page shares (auto-escaped: only SafeHtml goes in raw). */
export function layout(o: LayoutOptions): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${o.title} · ${o.brand?.name ?? o.site}</title>
<link rel="stylesheet" href="${o.stylesheet}">${o.brand?.stylesheet ? html`
<link rel="stylesheet" href="${o.brand.stylesheet}">` : ''}
<script src="${o.script}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="topbar"><div class="topbar-inner"><a class="brand" href="${o.home}">${o.brand ? html`${o.brand.logo ? html`<img class="brand-logo" src="${o.brand.logo}" alt="">` : ''}${o.brand.name}` : o.site}</a>${o.who}</div></header>${o.nav}
<main id="main"${o.narrow ? html` class="narrow"` : ''}>
${o.content}
</main>
<footer>${o.footer}</footer>
</body>
</html>`.value;
}

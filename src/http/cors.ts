import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * CORS for the public API (registered in its scope only, modules/public/scope.ts). Its callers are
 * apps on any origin and it uses no cookies or other credentials (the license key travels in the
 * body), so every origin may call it, never with credentials (no Access-Control-Allow-Credentials,
 * so browsers send no cookies). The server API stays closed to browsers: API keys belong on
 * servers, not in web pages.
 */
export function allowAnyOrigin(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', EXPOSED_HEADERS);
    done();
  });
}

/** Rate-limit answers a client library should be able to read. */
const EXPOSED_HEADERS = 'retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset';

/** How long a browser may reuse a preflight (Chromium caps it at 2 hours, Firefox at 24). */
export const PREFLIGHT_MAX_AGE_SECONDS = 86400;

/**
 * The request headers a page may send to the public API (docs/decisions/drop-in.md): what
 * client libraries set (their user agent, content negotiation, `X-Requested-With`) and any `x-`
 * client header, but never a header that carries credentials or that proxies and this server act
 * on (forwarding, method overrides): the public API reads none of the allowed ones, so allowing
 * them changes nothing it decides.
 */
const ALLOWED_NAMED = new Set(['content-type', 'accept', 'accept-language', 'content-language', 'user-agent', 'x-requested-with', 'cache-control', 'pragma']);
const REFUSED_X = /^x-(forwarded|real-ip|client-ip|original-|http-method|method-override|csrf|xsrf|api-key|auth|access-token|amz-|goog-)/;
const TOKEN = /^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** A preflight never needs more; a longer list is answered with what fits. */
const MAX_REQUESTED = 32;

export function isAllowedRequestHeader(name: string): boolean {
  if (!TOKEN.test(name)) return false;
  if (ALLOWED_NAMED.has(name)) return true;
  return name.startsWith('x-') && name.length > 2 && !REFUSED_X.test(name);
}

/** The allowed subset of an `Access-Control-Request-Headers` value, lower-cased, in its order. */
export function allowedRequestHeaders(requested: string | undefined): string[] {
  if (!requested) return [];
  const names = requested.split(',', MAX_REQUESTED).map((h) => h.trim().toLowerCase());
  return [...new Set(names.filter(isAllowedRequestHeader))];
}

/**
 * Answers a preflight for any public path. The allowed headers echo what was asked, filtered, so
 * the answer varies with the request's header list (`Vary` lets caches keep them apart); a
 * refused header is left out, and the browser then refuses the call itself.
 */
export function corsPreflight(req: FastifyRequest, reply: FastifyReply): void {
  const requested = req.headers['access-control-request-headers'];
  const allowed = allowedRequestHeaders(Array.isArray(requested) ? requested.join(',') : requested);
  reply
    .code(204)
    .header('access-control-allow-methods', 'GET, POST, DELETE')
    .header('access-control-allow-headers', allowed.length ? allowed.join(', ') : 'content-type')
    .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS))
    .header('vary', 'access-control-request-headers')
    .send();
}

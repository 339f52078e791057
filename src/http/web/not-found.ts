import type { FastifyReply, FastifyRequest } from 'fastify';
import { pageHeaders, sendPage } from './pages.ts';

/** A page scope's "not found" page: which scope a path belongs to decides the page's look and its way back. */
export interface NotFoundScope {
  prefix: string;
  page: () => string;
}

/**
 * The answer to a browser that opened an unknown page: an HTML 404 in the look of the scope the path
 * is under (the portal's for /portal/..., else the dashboard's), never the API's JSON.
 */
export function notFoundPages(scopes: NotFoundScope[], fallback: () => string) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const scope = scopes.find((s) => request.url === s.prefix || request.url.startsWith(`${s.prefix}/`) || request.url.startsWith(`${s.prefix}?`));
    void pageHeaders(reply).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    return sendPage(reply, 404, (scope?.page ?? fallback)());
  };
}

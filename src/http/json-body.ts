import type { FastifyInstance } from 'fastify';
import { invalidRequest } from '../core/errors.ts';
import { ILL_FORMED, illFormedPath } from '../core/text.ts';

export const JSON_BODY_LIMIT = 64 * 1024;

/**
 * JSON bodies, with the quirk of the SDKs in the field: they send `Content-Type:
 * application/json` with an empty body on requests that take none. An empty body is `{}`.
 * Everything else goes through Fastify's own parser (prototype-poisoning safe).
 */
export function registerJsonBody(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // JSON is the only body type of the API (a route that takes another adds its own parser): 415 otherwise.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, {});
    parse(request, text, done);
  });
  // A POST with no body at all (no Content-Type) is treated like `{}` too. A callback hook, not
  // an async one: it runs on every request and needs no promise.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined && request.method !== 'GET' && request.method !== 'HEAD') request.body = {};
    const illFormed = illFormedPath(request.body, '') ?? illFormedPath(request.query, 'query') ?? illFormedPath(request.params, 'params');
    if (illFormed !== undefined) return done(invalidRequest(illFormed || 'body', ILL_FORMED));
    done();
  });
}

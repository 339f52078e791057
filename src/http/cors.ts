import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * CORS for the public API (registered in its scope only, modules/public/scope.ts). Its callers are
 * apps on any origin and it uses no cookies or other credentials (the license key travels in the
 * body), so every origin may call it. The server API stays closed to browsers: API keys belong on
 * servers, not in web pages.
 */
export function allowAnyOrigin(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', 'retry-after');
    done();
  });
}

/** Answers a preflight for any public path. */
export function corsPreflight(_req: FastifyRequest, reply: FastifyReply): void {
  reply
    .code(204)
    .header('access-control-allow-methods', 'GET, POST, DELETE')
    .header('access-control-allow-headers', 'content-type')
    .header('access-control-max-age', '86400')
    .send();
}

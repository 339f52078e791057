import type { FastifyInstance } from 'fastify';

const PUBLIC_PREFIX = '/api/v1/public/';

/**
 * The public API is called by apps: browsers and Electron renderers on any origin. It uses no
 * cookies or other credentials (the license key travels in the body), so every origin may call
 * it and preflights are answered here. The server API stays closed to browsers: API keys belong
 * on servers, not in web pages.
 */
export function allowCrossOriginPublicApi(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (req, reply, done) => {
    if (!req.url.startsWith(PUBLIC_PREFIX)) return done();
    reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', 'retry-after');
    if (req.method !== 'OPTIONS') return done();
    // Answered here: a callback hook that sends does not call done().
    reply
      .code(204)
      .header('access-control-allow-methods', 'GET, POST, DELETE')
      .header('access-control-allow-headers', 'content-type')
      .header('access-control-max-age', '86400')
      .send();
  });
}

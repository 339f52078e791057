import type { FastifyInstance } from 'fastify';
import { actionOf, requireAccess } from '../core/access.ts';
import type { Principal } from '../core/principal.ts';
import type { ApiKeyService } from '../modules/api-keys/service.ts';
import { API_ACCESS, routeKey } from './api-access.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who calls: the API key, its account and its scope. Every server-API service call receives it. */
    principal: Principal;
  }
  interface FastifyInstance {
    /** Every route behind an API key, as `METHOD path` (its key in API_ACCESS), in registration order. */
    serverApiRoutes: string[];
  }
}

/** The declared key of a request's route: HEAD answers as its GET does. */
const declaredKey = (method: string, url: string) => routeKey(method === 'HEAD' ? 'GET' : method, url);

/**
 * Server API: `Authorization: Bearer sk_...`, checked before the body is even parsed, then the
 * key's scope against the area the route declares in API_ACCESS (403 `insufficient_scope`; a
 * route declaring none is refused to every key). The root app must decorate `serverApiRoutes`.
 */
export function requireApiKey(app: FastifyInstance, apiKeys: ApiKeyService): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') app.serverApiRoutes.push(routeKey(method, route.url));
  });
  app.addHook('onReady', async () => {
    const undeclared = app.serverApiRoutes.filter((key) => !Object.hasOwn(API_ACCESS, key));
    if (undeclared.length > 0) app.log.error({ routes: undeclared }, 'server-API routes without an area in src/http/api-access.ts: every API key is refused there');
  });
  app.addHook('onRequest', async (request) => {
    request.principal = await apiKeys.authenticate(request.headers.authorization);
    if (request.is404) return;
    const key = declaredKey(request.method, request.routeOptions.url ?? '');
    requireAccess(request.principal.access, Object.hasOwn(API_ACCESS, key) ? API_ACCESS[key] : undefined, actionOf(request.method));
  });
}

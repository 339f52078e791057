import type { FastifyInstance } from 'fastify';
import type { Principal } from '../core/principal.ts';
import type { ApiKeyService } from '../modules/api-keys/service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who calls: the API key and its account. Every server-API service call receives it. */
    principal: Principal;
  }
}

/** Server API: `Authorization: Bearer sk_...`, checked before the body is even parsed. */
export function requireApiKey(app: FastifyInstance, apiKeys: ApiKeyService): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request) => {
    request.principal = await apiKeys.authenticate(request.headers.authorization);
  });
}

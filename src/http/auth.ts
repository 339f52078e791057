import type { FastifyInstance } from 'fastify';
import type { ApiKeyService } from '../modules/api-keys/service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account the API key belongs to: every server-API query is scoped to it. */
    userId: string;
  }
}

/** Server API: `Authorization: Bearer sk_...`, checked before the body is even parsed. */
export function requireApiKey(app: FastifyInstance, apiKeys: ApiKeyService): void {
  app.decorateRequest('userId', '');
  app.addHook('onRequest', async (request) => {
    request.userId = await apiKeys.authenticate(request.headers.authorization);
  });
}

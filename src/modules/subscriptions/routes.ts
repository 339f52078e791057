import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EmptyResponse, errorResponses, LicenseKeyHeader } from '../../http/schema-helpers.ts';
import type { SubscriptionService } from './service.ts';

/** Server API: a license's subscription link. */
export const subscriptionRoutes: FastifyPluginAsyncTypebox<{ subscriptions: SubscriptionService }> = async (app, { subscriptions }) => {
  app.delete(
    '/licenses/subscription',
    {
      schema: {
        tags: ['Licenses'],
        security: [{ apiKey: [] }],
        operationId: 'unlink-license-subscription',
        summary: 'Unlink a license from its subscription',
        description: "Later events about the subscription leave the license alone (its expiry, product and devices stay as they are). 404 when the license follows no subscription.",
        headers: LicenseKeyHeader,
        response: { 200: EmptyResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      await subscriptions.unlink(req.principal, req.headers['license-key']);
      return reply.send();
    },
  );
};

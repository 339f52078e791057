import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { lemonSqueezyCredential } from './lemonsqueezy.ts';
import { ConnectionReply, connectionView } from './schemas.ts';
import type { PaymentService } from './service.ts';

const tags = ['Payments'];
const security = [{ apiKey: [] }];
const LEMONSQUEEZY = 'lemonsqueezy';

export const ConnectLemonSqueezyBody = Type.Object(
  {
    apiKey: Type.String({ minLength: 8, maxLength: 2048, pattern: '^[A-Za-z0-9._-]+$', description: 'A Lemon Squeezy API key (Settings → API); test-mode keys make a test-mode connection.' }),
    storeId: Type.String({ minLength: 1, maxLength: 20, pattern: '^[0-9]+$', description: "The store's id (Settings → Stores)." }),
  },
  { additionalProperties: false },
);

/** Server API: the Lemon Squeezy connection (the fulfilment, mappings and purchases are the payments routes'). */
export const lemonSqueezyConnectionRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService }> = async (app, { payments }) => {
  app.put(
    '/payments/lemonsqueezy',
    {
      schema: {
        tags,
        security,
        operationId: 'connect-lemonsqueezy',
        summary: 'Connect a Lemon Squeezy store',
        description:
          'Reads the store with the key (which checks both), creates the webhook at Lemon Squeezy with a generated signing secret, and stores the key and secret encrypted. Connecting again replaces the connection and deletes the old webhook. A key Lemon Squeezy refuses is a 400 invalid_provider_key; a store the key cannot see a 400 invalid_request; Lemon Squeezy unreachable a 502 provider_unavailable.',
        body: ConnectLemonSqueezyBody,
        response: { 200: ConnectionReply, ...errorResponses(400, 401, 403, 502) },
      },
    },
    async (req) => connectionView(await payments.connect(req.principal, LEMONSQUEEZY, lemonSqueezyCredential(req.body.apiKey, req.body.storeId))),
  );

  app.get(
    '/payments/lemonsqueezy',
    { schema: { tags, security, operationId: 'get-lemonsqueezy-connection', summary: 'The Lemon Squeezy connection', response: { 200: ConnectionReply, ...errorResponses(401, 403) } } },
    async (req) => connectionView(await payments.connection(req.principal, LEMONSQUEEZY)),
  );

  app.delete(
    '/payments/lemonsqueezy',
    {
      schema: {
        tags,
        security,
        operationId: 'disconnect-lemonsqueezy',
        summary: 'Disconnect Lemon Squeezy',
        description: 'Deletes the webhook at Lemon Squeezy and forgets the key.',
        response: { 200: EmptyResponse, ...errorResponses(401, 403, 502) },
      },
    },
    async (req, reply) => {
      await payments.disconnect(req.principal, LEMONSQUEEZY);
      return reply.send();
    },
  );
};

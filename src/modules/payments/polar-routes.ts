import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { polarCredential } from './polar.ts';
import { ConnectionReply, connectionView } from './schemas.ts';
import type { PaymentService } from './service.ts';

const tags = ['Payments'];
const security = [{ apiKey: [] }];
const POLAR = 'polar';

export const ConnectPolarBody = Type.Object(
  {
    accessToken: Type.String({
      minLength: 8,
      maxLength: 255,
      pattern: '^polar_[A-Za-z0-9_-]+$',
      description: 'An organization access token polar_oat_... with the scopes in docs/payments.md (a personal polar_pat_... is accepted too).',
    }),
    organizationId: Type.String({ format: 'uuid', description: "The Polar organization's id (Settings → General)." }),
    sandbox: Type.Optional(Type.Boolean({ description: "true: Polar's sandbox (sandbox-api.polar.sh); default false." })),
  },
  { additionalProperties: false },
);

/** Server API: the Polar connection (the fulfilment, mappings and purchases are the payments routes'). */
export const polarConnectionRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService }> = async (app, { payments }) => {
  app.put(
    '/payments/polar',
    {
      schema: {
        tags,
        security,
        operationId: 'connect-polar',
        summary: 'Connect a Polar organization',
        description:
          'Reads the organization with the token (which checks it), creates the webhook endpoint at Polar, and stores the token and signing secret encrypted. Connecting again replaces the connection and deletes the old endpoint. A token Polar refuses (or an organization it cannot see) is a 400 invalid_provider_key; Polar unreachable is a 502 provider_unavailable.',
        body: ConnectPolarBody,
        response: { 200: ConnectionReply, ...errorResponses(400, 401, 403, 502) },
      },
    },
    async (req) =>
      connectionView(await payments.connect(req.principal, POLAR, polarCredential({ accessToken: req.body.accessToken, organizationId: req.body.organizationId, sandbox: req.body.sandbox ?? false }))),
  );

  app.get(
    '/payments/polar',
    { schema: { tags, security, operationId: 'get-polar-connection', summary: 'The Polar connection', response: { 200: ConnectionReply, ...errorResponses(401, 403) } } },
    async (req) => connectionView(await payments.connection(req.principal, POLAR)),
  );

  app.delete(
    '/payments/polar',
    {
      schema: {
        tags,
        security,
        operationId: 'disconnect-polar',
        summary: 'Disconnect Polar',
        description: 'Deletes the webhook endpoint at Polar and forgets the token.',
        response: { 200: EmptyResponse, ...errorResponses(401, 403, 502) },
      },
    },
    async (req, reply) => {
      await payments.disconnect(req.principal, POLAR);
      return reply.send();
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses, pageLimit } from '../../http/schema-helpers.ts';
import {
  CreatedWebhookEndpointBody,
  CreateWebhookBody,
  DeliveriesQuery,
  DeliveryBody,
  DeliveryDetailBody,
  deliveryDetailView,
  DeliveryPageBody,
  DeliveryParams,
  deliveryView,
  endpointView,
  UpdateWebhookBody,
  WebhookEndpointBody,
  WebhookParams,
} from './schemas.ts';
import { DELIVERIES_LIMIT_MAX, type WebhookService } from './service.ts';

const tags = ['Webhooks'];
const security = [{ apiKey: [] }];

/** Server API for operator webhooks (API key required; another account's endpoint is a 404). */
export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  app.post(
    '/webhooks',
    {
      schema: {
        operationId: 'create-webhook-endpoint',
        tags,
        security,
        summary: 'Create a webhook endpoint',
        description: 'Answers with the signing secret (whsec_...), shown this once.',
        body: CreateWebhookBody,
        response: { 200: CreatedWebhookEndpointBody, ...errorResponses(400, 401, 403) },
      },
      config: { answerHoldsSecret: true },
    },
    async (req) => {
      const { endpoint, secret } = await webhooks.create(req.principal, req.body);
      return { ...endpointView(endpoint), secret };
    },
  );

  app.get(
    '/webhooks',
    {
      schema: { operationId: 'list-webhook-endpoints', tags, security, summary: "List the account's webhook endpoints", response: { 200: Type.Object({ data: Type.Array(WebhookEndpointBody) }), ...errorResponses(401, 403) } },
    },
    async (req) => ({ data: (await webhooks.list(req.principal)).map(endpointView) }),
  );

  app.get(
    '/webhooks/:webhookId',
    { schema: { operationId: 'get-webhook-endpoint', tags, security, summary: 'Get a webhook endpoint', params: WebhookParams, response: { 200: WebhookEndpointBody, ...errorResponses(401, 403, 404) } } },
    async (req) => endpointView(await webhooks.get(req.principal, req.params.webhookId)),
  );

  app.patch(
    '/webhooks/:webhookId',
    {
      schema: {
        operationId: 'update-webhook-endpoint',
        tags,
        security,
        summary: 'Update a webhook endpoint',
        description: '`enabled: true` re-enables an endpoint that was disabled after failing for 24 hours.',
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: WebhookEndpointBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => endpointView(await webhooks.update(req.principal, req.params.webhookId, req.body)),
  );

  app.delete(
    '/webhooks/:webhookId',
    {
      schema: {
        operationId: 'delete-webhook-endpoint',
        tags,
        security,
        summary: 'Delete a webhook endpoint and its deliveries',
        params: WebhookParams,
        response: { 200: EmptyResponse, ...errorResponses(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await webhooks.delete(req.principal, req.params.webhookId);
      return reply.send();
    },
  );

  app.get(
    '/webhooks/:webhookId/deliveries',
    {
      schema: {
        operationId: 'list-webhook-deliveries',
        tags,
        security,
        summary: "List an endpoint's deliveries, newest first, each with its attempts",
        params: WebhookParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveryPageBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit, DELIVERIES_LIMIT_MAX);
      const page = await webhooks.deliveries(req.principal, req.params.webhookId, { limit, cursor: req.query.cursor });
      return { data: page.data.map(deliveryView), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/webhooks/:webhookId/deliveries/:deliveryId',
    {
      schema: {
        operationId: 'get-webhook-delivery',
        tags,
        security,
        summary: 'Get a delivery with its body and each attempt\'s request and answer',
        description: "Each attempt shows the headers sent and the answer's status, headers and first 4 KiB of body (`truncated` when longer).",
        params: DeliveryParams,
        response: { 200: DeliveryDetailBody, ...errorResponses(401, 403, 404) },
      },
    },
    async (req) => deliveryDetailView(await webhooks.delivery(req.principal, req.params.webhookId, req.params.deliveryId)),
  );

  app.post(
    '/webhooks/:webhookId/test',
    {
      schema: {
        operationId: 'test-webhook-endpoint',
        tags,
        security,
        summary: 'Send a test event (ping) to an endpoint',
        description: 'Queues a `ping` event, `{"id", "type": "ping", "createdAt", "data": {"endpoint": {"id", "url"}}}`, delivered, signed and retried like every event whatever the endpoint takes; the answer is its delivery.',
        params: WebhookParams,
        response: { 200: DeliveryBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => deliveryView(await webhooks.test(req.principal, req.params.webhookId)),
  );

  app.post(
    '/webhooks/:webhookId/deliveries/:deliveryId/redeliver',
    {
      schema: {
        operationId: 'redeliver-webhook',
        tags,
        security,
        summary: "Send a delivery's event again",
        description: 'Queues a new delivery of the same event (same event id and body) with its own attempts and retries.',
        params: DeliveryParams,
        response: { 200: DeliveryBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => deliveryView(await webhooks.redeliver(req.principal, req.params.webhookId, req.params.deliveryId)),
  );
};

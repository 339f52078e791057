import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses, pageLimit } from '../../http/schema-helpers.ts';
import { ProductParams } from '../products/schemas.ts';
import {
  ConnectionReply,
  ConnectStripeBody,
  connectionView,
  CreateMappingBody,
  InvoiceReply,
  MappingParams,
  mappingView,
  PriceMappingReply,
  PurchaseListQuery,
  PurchasePageReply,
  PurchaseReply,
  PurchaseParams,
  purchaseView,
  WebhookParams,
} from './schemas.ts';
import { lemonSqueezyConnectionRoutes } from './lemonsqueezy-routes.ts';
import { polarConnectionRoutes } from './polar-routes.ts';
import { PURCHASE_LIMIT_MAX, type PaymentService } from './service.ts';

const tags = ['Payments'];
const security = [{ apiKey: [] }];
const STRIPE = 'stripe';

/** Stripe's events are a few KiB; a generous bound that still caps what an unauthenticated caller can send. */
export const WEBHOOK_BODY_LIMIT = 256 * 1024;
const MINUTE = 60_000;

/** Server API: the Stripe connection, price mappings, purchases and their invoices. */
export const paymentRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService }> = async (app, { payments }) => {
  app.put(
    '/payments/stripe',
    {
      schema: {
        tags,
        security,
        operationId: 'connect-stripe',
        summary: 'Connect a Stripe account',
        description:
          'Creates the webhook endpoint at Stripe with the key (which checks it) and stores the key and signing secret encrypted. Connecting again replaces the connection and deletes the old endpoint. A key Stripe refuses is a 400 invalid_provider_key; Stripe unreachable is a 502 provider_unavailable.',
        body: ConnectStripeBody,
        response: { 200: ConnectionReply, ...errorResponses(400, 401, 403, 502) },
      },
    },
    async (req) => connectionView(await payments.connect(req.principal, STRIPE, req.body.restrictedKey)),
  );

  app.get(
    '/payments/stripe',
    { schema: { tags, security, operationId: 'get-stripe-connection', summary: 'The Stripe connection', response: { 200: ConnectionReply, ...errorResponses(401, 403) } } },
    async (req) => connectionView(await payments.connection(req.principal, STRIPE)),
  );

  app.delete(
    '/payments/stripe',
    {
      schema: {
        tags,
        security,
        operationId: 'disconnect-stripe',
        summary: 'Disconnect Stripe',
        description: 'Deletes the webhook endpoint at Stripe and forgets the keys.',
        response: { 200: EmptyResponse, ...errorResponses(401, 403, 502) },
      },
    },
    async (req, reply) => {
      await payments.disconnect(req.principal, STRIPE);
      return reply.send();
    },
  );

  await lemonSqueezyConnectionRoutes(app, { payments });
  await polarConnectionRoutes(app, { payments });

  // One route per provider, one implementation: the adapter's refreshEndpoint does the provider's part.
  for (const { name, info } of payments.webhookRoutes()) {
    app.post(
      `/payments/${name}/refresh-endpoint`,
      {
        schema: {
          tags,
          security,
          operationId: `refresh-${name}-endpoint`,
          summary: `Update the ${info.label} endpoint's events`,
          description: `Makes the webhook endpoint at ${info.label} listen to every event the service handles now (connections made before a new event was handled keep their old list until then). 400 payments_not_connected without a connection; 400 invalid_request when the endpoint is gone at ${info.label} (connect again); 400 invalid_provider_key when ${info.label} refuses the stored key; 502 provider_unavailable when ${info.label} cannot be reached.`,
          response: { 200: ConnectionReply, ...errorResponses(400, 401, 403, 502) },
        },
      },
      async (req) => connectionView(await payments.refreshEndpoint(req.principal, name)),
    );
  }

  app.post(
    '/products/:productId/prices',
    {
      schema: {
        tags,
        security,
        operationId: 'create-price-mapping',
        summary: "Map a provider's price to the product",
        description:
          'A purchase of the price then creates a license of this product. provider: stripe (default; priceId a price id), lemonsqueezy (priceId a variant id) or polar (priceId a product id). The price must exist at the provider (400 otherwise) and maps to one product of the account (409 price_already_mapped). With billing subscription, the license follows the subscription: licenseType timed, no offsetDays or fixedExpiresAt, graceDays 0 to 60 (default 7).',
        params: ProductParams,
        body: CreateMappingBody,
        response: { 200: PriceMappingReply, ...errorResponses(400, 401, 403, 404, 409, 502) },
      },
    },
    async (req) => {
      const { licenseType, billing, provider, ...rest } = req.body;
      return mappingView(await payments.addMapping(req.principal, req.params.productId, provider ?? STRIPE, { ...rest, billing: billing as 'one_time' | 'subscription' | undefined, licenseType: licenseType as 'perpetual' | 'timed' }));
    },
  );

  app.get(
    '/products/:productId/prices',
    {
      schema: {
        tags,
        security,
        operationId: 'list-price-mappings',
        summary: "The product's price mappings",
        params: ProductParams,
        response: { 200: Type.Array(PriceMappingReply), ...errorResponses(401, 403, 404) },
      },
    },
    async (req) => (await payments.listMappings(req.principal, req.params.productId)).map(mappingView),
  );

  app.delete(
    '/products/:productId/prices/:priceId',
    {
      schema: {
        tags,
        security,
        operationId: 'delete-price-mapping',
        summary: 'Remove a price mapping',
        params: MappingParams,
        response: { 200: EmptyResponse, ...errorResponses(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await payments.removeMapping(req.principal, req.params.productId, req.params.priceId);
      return reply.send();
    },
  );

  app.get(
    '/payments/purchases',
    {
      schema: {
        tags,
        security,
        operationId: 'list-purchases',
        summary: 'Purchases, newest first',
        querystring: PurchaseListQuery,
        response: { 200: PurchasePageReply, ...errorResponses(400, 401, 403) },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit, PURCHASE_LIMIT_MAX);
      const page = await payments.listPurchases(req.principal, { limit, cursor: req.query.cursor });
      return { data: page.data.map(purchaseView), nextCursor: page.nextCursor };
    },
  );

  app.post(
    '/payments/purchases/:purchaseId/fulfil',
    {
      schema: {
        tags,
        security,
        operationId: 'fulfil-purchase',
        summary: 'Fulfil an unmapped purchase',
        description:
          "Once the purchase's prices are mapped: each item without a license gets one (and the purchase e-mail), exactly once, as the webhook would have done. A purchase fulfilled already is answered as it is; 400 when none of its open prices is mapped yet; 409 purchase_not_unmapped for a refunded, disputed or unmatched one; 502 when Stripe cannot be reached.",
        params: PurchaseParams,
        response: { 200: PurchaseReply, ...errorResponses(400, 401, 403, 404, 409, 502) },
      },
    },
    async (req) => purchaseView(await payments.fulfilLater(req.principal, req.params.purchaseId)),
  );

  app.get(
    '/payments/purchases/:purchaseId/invoice',
    {
      schema: {
        tags,
        security,
        operationId: 'get-purchase-invoice',
        summary: "A purchase's invoice",
        description: 'Fetched from Stripe now (its links expire). 404 when the purchase has no invoice.',
        params: PurchaseParams,
        response: { 200: InvoiceReply, ...errorResponses(400, 401, 403, 404, 502) },
      },
    },
    async (req) => payments.invoice(req.principal, req.params.purchaseId),
  );
};

/**
 * The providers' notifications, one route per provider (its adapter names the signature headers and
 * the rate-limit bucket): no API key (the signature over the raw body proves the sender), so this
 * scope reads every body as bytes. 200 only once the work is committed; any failure is a 500 so
 * the provider delivers the event again.
 */
export const paymentWebhookRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService; perConnectionPerMinute: number | false }> = async (
  app,
  { payments, perConnectionPerMinute },
) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

  for (const { name, info } of payments.webhookRoutes()) {
    const connectionOf = (req: { params: unknown }) => (req.params as { connectionId?: string }).connectionId ?? '';
    app.post(
      `/payments/${name}/webhook/:connectionId`,
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        ...(perConnectionPerMinute ? { onRequest: app.rateLimit({ max: perConnectionPerMinute, timeWindow: MINUTE, keyGenerator: (req) => info.rateLimitKey(connectionOf(req)) }) } : {}),
        schema: {
          tags,
          operationId: `receive-${name}-webhook`,
          summary: info.summary,
          description: info.description,
          params: WebhookParams,
          body: Type.Unsafe<Buffer>({ description: `The event exactly as ${info.label} sent it.` }),
          response: { 200: Type.Object({ received: Type.Boolean() }), ...errorResponses(400, 404, 413, 429, 500) },
        },
      },
      async (req) => {
        // No body is an empty one: the connection (404) and the signature (400 invalid_signature) are checked first, as for any event.
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const outcome = await payments.handleNotification(name, req.params.connectionId, body, req.headers);
        if (outcome.outcome === 'ignored' && outcome.malformed !== undefined) {
          req.log.warn({ provider: name, connectionId: req.params.connectionId, type: outcome.type, malformed: outcome.malformed }, 'payment event malformed: ignored');
        } else {
          // A subscription item whose price is not mapped needs the operator: the line says which.
          const unmapped = outcome.outcome === 'subscription' && outcome.unmappedPrices.length > 0 ? { unmappedPrices: outcome.unmappedPrices } : {};
          req.log.info({ provider: name, connectionId: req.params.connectionId, outcome: outcome.outcome, ...unmapped }, 'payment event handled');
        }
        return { received: true };
      },
    );
  }
};

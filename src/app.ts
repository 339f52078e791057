import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config } from './config.ts';
import { AccessLog, loggerOptions, requestLogger } from './http/access-log.ts';
import { requireApiKey } from './http/auth.ts';
import { documentIdempotencyKey, registerIdempotency } from './http/idempotency.ts';
import { nameDocumentSchemas } from './http/openapi.ts';
import { Metrics, registerMetrics } from './http/metrics.ts';
import { registerRateLimits } from './http/rate-limit.ts';
import { clientErrorHandler, frameworkErrors, refuseWhileClosing, registerErrorHandling } from './http/errors.ts';
import { JSON_BODY_LIMIT, registerJsonBody } from './http/json-body.ts';
import { auditRoutes } from './modules/audit/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { type MailOptions, registerOutboxWorker } from './modules/mail/plugin.ts';
import { Csrf } from './http/web/csrf.ts';
import { paymentRoutes, paymentWebhookRoutes } from './modules/payments/routes.ts';
import { subscriptionRoutes } from './modules/subscriptions/routes.ts';
import { offerRoutes } from './modules/offers/routes.ts';
import { portalApiRoutes, portalRoutes } from './modules/portal/routes.ts';
import { notFoundPage as portalNotFoundPage } from './modules/portal/pages.ts';
import { registerActivityFlush } from './modules/activity/plugin.ts';
import { dashboardNotFoundPage, dashboardRoutes, type SignedInRoute } from './modules/dashboard/routes.ts';
import { notFoundPages } from './http/web/not-found.ts';
import { registerSightingsFlush } from './modules/licenses/sightings-plugin.ts';
import { productImageRoutes } from './modules/product-images/routes.ts';
import { licenseTokenRoutes } from './modules/license-tokens/routes.ts';
import { LicenseBody } from './modules/licenses/schemas.ts';
import { licenseRoutes } from './modules/licenses/routes.ts';
import { ProductBody } from './modules/products/schemas.ts';
import { productRoutes } from './modules/products/routes.ts';
import { publicApi } from './modules/public/scope.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import type { Services } from './services.ts';

export interface AppOptions {
  config: Config;
  services: Services;
  /** false silences logs (tests); otherwise structured JSON logs at config.logLevel. */
  logger?: boolean;
  /** Where logs go (stdout, written synchronously, by default; `npm start` passes an asynchronous one). */
  logStream?: DestinationStream;
  /** E-mail transport and outbox-worker overrides (tests). */
  mail?: MailOptions;
}

const MINUTE = 60_000;

/** Node wants headersTimeout <= requestTimeout when both are on. */
const headersTimeout = (h: Config['http']) => (h.requestTimeoutMs > 0 && h.headersTimeoutMs > 0 ? Math.min(h.headersTimeoutMs, h.requestTimeoutMs) : h.headersTimeoutMs);

/** A number of hops becomes proxy-addr's own hop rule (Fastify's types take no number). */
const trustProxyOption = (trust: Config['trustProxy']) => (typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust);

export async function buildApp({ config, services, logger = true, logStream, mail }: AppOptions): Promise<FastifyInstance> {
  // One access line per request instead of Fastify's two (http/access-log.ts).
  const accessLog = logger ? new AccessLog({ slowMs: config.logSlowMs, samplePublic: config.logSamplePublic }) : undefined;
  const app = Fastify({
    logger: logger && loggerOptions(config.logLevel, logStream),
    ...(accessLog ? { logController: accessLog, childLoggerFactory: requestLogger } : {}),
    bodyLimit: JSON_BODY_LIMIT,
    // The timeout policy (docs/security.md): silent, slow and idle connections are closed.
    connectionTimeout: config.http.connectionTimeoutMs,
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    // headersTimeout and requestTimeout are enforced by a sweep every connectionsCheckingInterval
    // (Node's default is 30 s, which would let a silent connection live that much longer).
    http: { headersTimeout: headersTimeout(config.http), connectionsCheckingInterval: 1000 },
    trustProxy: trustProxyOption(config.trustProxy),
    forceCloseConnections: 'idle',
    // Requests arriving while shutting down get the service's error model (below), not Fastify's body.
    return503OnClosing: false,
    // Router and HTTP-parser errors answer the service's JSON error body too (http/errors.ts).
    frameworkErrors,
    clientErrorHandler,
    routerOptions: { ignoreTrailingSlash: true },
    // Wrong types are a 400, never silently coerced ("5" is not a maxDevices).
    ajv: { customOptions: { coerceTypes: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  capConnections(app, config.http.maxConnections);
  // The routes behind an API key and behind a dashboard sign-in, as their access checks see them (tests enumerate them).
  app.decorate('serverApiRoutes', [] as string[]);
  app.decorate('signedInRoutes', [] as SignedInRoute[]);
  registerErrorHandling(
    app,
    notFoundPages([{ prefix: '/portal', page: portalNotFoundPage }], dashboardNotFoundPage),
  );
  accessLog?.watchErrors(app);
  refuseWhileClosing(app);
  registerJsonBody(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Tessera licensing API', version: '1.0.0', description: 'Server API (API key) and public API (no authentication).' },
      // Paths carry their /api/v1 prefix, so the server is the service's own address.
      servers: [{ url: config.baseUrl, description: 'This service (BASE_URL).' }],
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, sk_...' } } },
    },
    // Shared schemas appear under their $id (License, Product) rather than def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    // Only an OpenAPI document is generated here (never Swagger 2.0's swaggerObject).
    transformObject: (document) =>
      'openapiObject' in document ? nameDocumentSchemas(documentIdempotencyKey(document.openapiObject), app.serverApiRoutes) : document.swaggerObject,
  });
  app.addSchema(LicenseBody);
  app.addSchema(ProductBody);

  const metrics = new Metrics({
    store: services.store,
    outbox: services.outbox,
    validationCache: services.validationCache,
    webhooks: { outcomes: services.webhookDeliverer.outcomes, backlog: () => services.webhooks.backlog(), clock: services.clock },
  });
  registerMetrics(app, metrics, config.metricsToken);

  const limits = config.rateLimit;
  await registerRateLimits(app, { redisUrl: limits.redisUrl, keyPrefix: limits.redisKeyPrefix, onFallback: () => metrics.rateLimitFallbacks.inc() });

  await app.register(healthRoutes, { store: services.store });
  registerOutboxWorker(app, services, config, mail);
  await app.register(portalRoutes, {
    portal: services.portal,
    invoices: services.payments,
    billing: services.payments,
    branding: services.branding,
    baseUrl: config.baseUrl,
    csrf: new Csrf(config.secretKey, 'portal'),
    // Secure cookies need https; a plain-http BASE_URL (local use) gets them without the flag.
    secureCookies: config.baseUrl.startsWith('https://'),
    limits: {
      enabled: limits.enabled,
      perClientPerMinute: limits.publicPerMinute,
      linksPerClientPerHour: limits.portalLinksPerClientPerHour,
      linksPerAddressPerClientPerHour: limits.portalLinksPerAddressPerHour,
      linksPerAddressPerHour: limits.portalLinksAllClientsPerAddressPerHour,
    },
  });
  await app.register(dashboardRoutes, {
    services,
    csrf: new Csrf(config.secretKey, 'dashboard'),
    secureCookies: config.baseUrl.startsWith('https://'),
    signupOpen: config.signup === 'open',
    limits: {
      enabled: limits.enabled,
      perClientPerMinute: limits.dashboardPerMinute,
      loginsPerAddress: limits.dashboardLoginsPerAddress,
      loginsAllClientsPerAddress: limits.dashboardLoginsAllClientsPerAddress,
      loginsPerClient: limits.dashboardLoginsPerClient,
    },
  });
  registerActivityFlush(app, services.activity);
  registerSightingsFlush(app, services.licenses.sightings);
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(
    async (api) => {
      await api.register(publicApi, {
        licenses: services.licenses,
        tokens: services.licenseTokens,
        images: services.productImages,
        activity: services.activity,
        perClientPerMinute: limits.enabled && limits.publicPerMinute,
        trials: services.trials,
        trialsPerClientPerHour: limits.enabled && limits.trialsPerClientPerHour,
      });
      await api.register(paymentWebhookRoutes, { payments: services.payments, perConnectionPerMinute: limits.enabled && limits.serverPerMinute });
      await api.register(async (server) => {
        requireApiKey(server, services.apiKeys);
        if (limits.enabled) {
          // Per account, after authentication: one tenant cannot starve the others.
          server.addHook('onRequest', server.rateLimit({ max: limits.serverPerMinute, timeWindow: MINUTE, keyGenerator: (req) => `server|${req.principal.accountId}` }));
        }
        registerIdempotency(server, services.idempotency);
        await server.register(productRoutes, { products: services.products });
        await server.register(licenseRoutes, { licenses: services.licenses, activity: services.activity, subscriptions: services.subscriptions });
        await server.register(auditRoutes, { audit: services.audit });
        await server.register(webhookRoutes, { webhooks: services.webhooks });
        await server.register(licenseTokenRoutes, { tokens: services.licenseTokens });
        await server.register(productImageRoutes, { images: services.productImages });
        await server.register(portalApiRoutes, { portal: services.portal });
        await server.register(paymentRoutes, { payments: services.payments });
        await server.register(subscriptionRoutes, { subscriptions: services.subscriptions });
        await server.register(offerRoutes, { offers: services.offers });
      });
    },
    { prefix: '/api/v1' },
  );

  return app;
}

/** Connections past the cap are closed as they arrive, and said so in the log (once a minute at most). */
function capConnections(app: FastifyInstance, max: number): void {
  if (max <= 0) return;
  app.server.maxConnections = max;
  let dropped = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  app.server.on('drop', () => {
    dropped++;
    const now = performance.now();
    if (now - loggedAt < MINUTE) return;
    loggedAt = now;
    app.log.warn({ maxConnections: max, dropped }, 'connection limit reached: closing new connections (MAX_CONNECTIONS)');
    dropped = 0;
  });
}

import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config } from './config.ts';
import { requireApiKey } from './http/auth.ts';
import { AccessLog, loggerOptions } from './http/access-log.ts';
import { refuseWhileClosing, registerErrorHandling } from './http/errors.ts';
import { JSON_BODY_LIMIT, registerJsonBody } from './http/json-body.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { type MailOptions, registerOutboxWorker } from './modules/mail/plugin.ts';
import { Csrf } from './http/web/csrf.ts';
import { portalApiRoutes, portalRoutes } from './modules/portal/routes.ts';
import { productImageRoutes } from './modules/product-images/routes.ts';
import { licenseTokenRoutes } from './modules/license-tokens/routes.ts';
import { LicenseBody } from './modules/licenses/schemas.ts';
import { licenseRoutes } from './modules/licenses/routes.ts';
import { ProductBody } from './modules/products/schemas.ts';
import { productRoutes } from './modules/products/routes.ts';
import { publicApi } from './modules/public/scope.ts';
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

export async function buildApp({ config, services, logger = true, logStream, mail }: AppOptions): Promise<FastifyInstance> {
  // One access line per request instead of Fastify's two (http/access-log.ts).
  const accessLog = logger ? new AccessLog({ slowMs: config.logSlowMs, samplePublic: config.logSamplePublic }) : undefined;
  const app = Fastify({
    logger: logger && loggerOptions(config.logLevel, logStream),
    ...(accessLog ? { logController: accessLog } : {}),
    bodyLimit: JSON_BODY_LIMIT,
    trustProxy: config.trustProxy,
    forceCloseConnections: 'idle',
    // Requests arriving while shutting down get the service's error model (below), not Fastify's body.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true },
    // Wrong types are a 400, never silently coerced ("5" is not a maxDevices).
    ajv: { customOptions: { coerceTypes: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerErrorHandling(app);
  accessLog?.watchErrors(app);
  refuseWhileClosing(app);
  registerJsonBody(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Tessera licensing API', version: '1.0.0', description: 'Server API (API key) and public API (no authentication).' },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, sk_...' } } },
    },
    // Shared schemas appear under their $id (License, Product) rather than def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  app.addSchema(LicenseBody);
  app.addSchema(ProductBody);

  const limits = config.rateLimit;
  await app.register(rateLimit, {
    global: false,
    errorResponseBuilder: (_req, context) => ({ statusCode: 429, message: `Rate limit exceeded; retry in ${context.after}.` }),
  });

  await app.register(healthRoutes, { store: services.store });
  registerOutboxWorker(app, services, config, mail);
  await app.register(portalRoutes, {
    portal: services.portal,
    csrf: new Csrf(config.secretKey, 'portal'),
    // Secure cookies need https; a plain-http BASE_URL (local use) gets them without the flag.
    secureCookies: config.baseUrl.startsWith('https://'),
    limits: {
      enabled: limits.enabled,
      perClientPerMinute: limits.publicPerMinute,
      linksPerClientPerHour: limits.portalLinksPerClientPerHour,
      linksPerAddressPerHour: limits.portalLinksPerAddressPerHour,
    },
  });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(
    async (api) => {
      await api.register(publicApi, {
        licenses: services.licenses,
        tokens: services.licenseTokens,
        images: services.productImages,
        perClientPerMinute: limits.enabled && limits.publicPerMinute,
      });
      await api.register(async (server) => {
        requireApiKey(server, services.apiKeys);
        if (limits.enabled) {
          // Per account, after authentication: one tenant cannot starve the others.
          server.addHook('onRequest', server.rateLimit({ max: limits.serverPerMinute, timeWindow: MINUTE, keyGenerator: (req) => req.principal.accountId }));
        }
        await server.register(productRoutes, { products: services.products });
        await server.register(licenseRoutes, { licenses: services.licenses });
        await server.register(licenseTokenRoutes, { tokens: services.licenseTokens });
        await server.register(productImageRoutes, { images: services.productImages });
        await server.register(portalApiRoutes, { portal: services.portal });
      });
    },
    { prefix: '/api/v1' },
  );

  return app;
}

import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { corsPreflight, allowAnyOrigin } from '../../http/cors.ts';
import type { LicenseTokenService } from '../license-tokens/service.ts';
import { publicLicenseTokenRoutes } from '../license-tokens/routes.ts';
import type { LicenseService } from '../licenses/service.ts';
import type { ProductImageService } from '../product-images/service.ts';
import { publicProductImageRoutes } from '../product-images/routes.ts';
import type { ActivityCounter } from '../activity/service.ts';
import { publicRoutes } from './routes.ts';
import type { TrialService } from '../trials/service.ts';
import { TRIALS_PATH, trialRoutes } from '../trials/routes.ts';

export interface PublicApiOptions {
  licenses: LicenseService;
  tokens: LicenseTokenService;
  images: ProductImageService;
  /** Where successful activations and validations are counted (the dashboard's activity). */
  activity?: ActivityCounter;
  /** Requests per minute per client address on each public endpoint, or false when limits are off. */
  perClientPerMinute: number | false;
  trials: TrialService;
  /** Trials started per hour per client address, or false when limits are off. */
  trialsPerClientPerHour: number | false;
}

const MINUTE = 60_000;

/**
 * The public API, called from apps (browsers and Electron renderers on any origin, desktop
 * programs): one encapsulated scope that owns its CORS and its rate limit, so they apply to exactly
 * these routes. Register it under `/api/v1`.
 */
export const publicApi: FastifyPluginAsync<PublicApiOptions> = async (app, { licenses, tokens, images, activity, perClientPerMinute, trials, trialsPerClientPerHour }) => {
  allowAnyOrigin(app);
  app.options('/public/*', { schema: { hide: true } }, corsPreflight);
  if (perClientPerMinute !== false) {
    // One counter per client and endpoint, as a per-route limit would keep (preflights are free).
    const limit = app.rateLimit({ max: perClientPerMinute, timeWindow: MINUTE, keyGenerator: (req) => `public|${req.ip}|${req.routeOptions.url}` });
    // Each trial creates a license: a client gets few per hour (one limit per request: the plugin runs one).
    const trialLimit =
      trialsPerClientPerHour === false ? limit : app.rateLimit({ max: trialsPerClientPerHour, timeWindow: 60 * MINUTE, keyGenerator: (req) => `trial|${req.ip}` });
    app.addHook('onRequest', async (req, reply) => {
      if (req.method !== 'OPTIONS') await (req.routeOptions.url?.endsWith(TRIALS_PATH) ? trialLimit : limit).call(app, req, reply);
    });
  }
  await app.register(publicRoutes, { licenses, tokens, activity });
  await app.register(publicLicenseTokenRoutes, { tokens });
  await app.register(trialRoutes, { trials, tokens });
  await app.register(publicProductImageRoutes, { images });
  // An unknown public path is a 404 a browser can read: answered in this scope, with its CORS
  // headers (the app's not-found handler runs outside it), and counted by its rate limit.
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/public/*',
    schema: { hide: true },
    handler: async () => {
      throw new AppError('not_found', 'Not found.');
    },
  });
};

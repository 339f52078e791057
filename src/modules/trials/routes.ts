import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../http/schema-helpers.ts';
import { PublicActivationResult } from '../public/schemas.ts';
import { activationAnswer, type TokenIssuer } from '../public/routes.ts';
import { StartTrialBody } from './schemas.ts';
import type { TrialService } from './service.ts';

export interface TrialRoutesOptions {
  trials: TrialService;
  tokens?: TokenIssuer;
}

/** The route's path, by which the public scope gives it its own rate limit (trials per client per hour). */
export const TRIALS_PATH = '/public/trials';

/** Public API: a trial started from an app, without a key. Register inside the public scope (its CORS and limits). */
export const trialRoutes: FastifyPluginAsyncTypebox<TrialRoutesOptions> = async (app, { trials, tokens }) => {
  app.post(
    TRIALS_PATH,
    {
      schema: {
        tags: ['Public'],
        operationId: 'public-start-trial',
        summary: 'Start a trial on a device',
        description:
          'Creates a timed license flagged trial (the product trial settings) and activates the device in one step; answers as activation, token included. One trial per product and device identifier, ever: again is 409 trial_already_used with the trial license status.',
        body: StartTrialBody,
        response: { 200: PublicActivationResult, ...errorResponses(400, 404, 409, 413, 415, 429) },
      },
    },
    async (req) => {
      const seal = tokens ? await tokens.sealForActivation(req.body.productId) : undefined;
      const activation = await trials.start(req.body, seal);
      return activationAnswer(activation);
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { deviceView, publicLicenseView } from '../licenses/schemas.ts';
import type { ActivityCounter } from '../activity/service.ts';
import type { ActivationSeal, LicenseService } from '../licenses/service.ts';
import { PublicActivateBody, PublicActivationResult, PublicLicenseQuery, PublicValidationResult } from './schemas.ts';

/** Seam for signed license tokens: a seal that signs a token when the product has tokens enabled. */
export interface TokenIssuer {
  /** Loads the signers of the products an activation may be for (before its unit, which awaits no I/O). */
  sealForActivation(productIds: string | string[]): Promise<ActivationSeal>;
}


export interface PublicRoutesOptions {
  licenses: LicenseService;
  tokens?: TokenIssuer;
  activity?: ActivityCounter;
}

const tags = ['Public'];

/** Public API, called from client apps: no API key, the license key travels in the body. */
export const publicRoutes: FastifyPluginAsyncTypebox<PublicRoutesOptions> = async (app, { licenses, tokens, activity }) => {

  app.post(
    '/public/licenses/activate',
    {
      schema: {
        tags,
        operationId: 'public-activate-license',
        summary: 'Activate a device',
        body: PublicActivateBody,
        response: { 200: PublicActivationResult, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (req) => {
      const { licenseKey, deviceIdentifier, deviceName, productId } = req.body;
      // The token is signed inside the activation: if signing fails, the device keeps no slot.
      const seal = tokens ? await tokens.sealForActivation(productId) : undefined;
      const activation = await licenses.publicActivate(licenseKey, productId, { identifier: deviceIdentifier, name: deviceName }, seal);
      activity?.activated(activation.license.accountId, activation.license.productId);
      return {
        isValid: true,
        status: activation.status,
        ...(activation.token === undefined ? {} : { token: activation.token }),
        device: deviceView(activation.device),
        license: publicLicenseView(activation.license),
      };
    },
  );

  app.post(
    '/public/licenses/validate',
    {
      schema: {
        tags,
        operationId: 'public-validate-license',
        summary: 'Validate a license on a device',
        description: 'Always 200 for a well-formed request; an invalid license gives isValid false, null fields and a reason.',
        body: PublicLicenseQuery,
        response: { 200: PublicValidationResult, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (req) => {
      const { licenseKey, deviceIdentifier, productId } = req.body;
      const result = await licenses.publicValidate(licenseKey, productId, deviceIdentifier);
      if (!result.isValid) return { isValid: false, status: null, device: null, license: null, reason: result.reason };
      activity?.validated(result.license.accountId, result.license.productId);
      return { isValid: true, status: result.status, device: deviceView(result.device), license: publicLicenseView(result.license) };
    },
  );

  app.delete(
    '/public/licenses/device',
    {
      schema: {
        tags,
        operationId: 'public-remove-device',
        summary: 'Remove a device (idempotent)',
        body: PublicLicenseQuery,
        response: { 200: EmptyResponse, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (req, reply) => {
      const { licenseKey, deviceIdentifier, productId } = req.body;
      await licenses.publicRemoveDevice(licenseKey, productId, deviceIdentifier);
      return reply.send();
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { publicDeviceView, publicLicenseView } from '../licenses/schemas.ts';
import type { ActivityCounter } from '../activity/service.ts';
import type { Activation, ActivationSeal, LicenseService, PublicValidation } from '../licenses/service.ts';
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

/** A public activation's answer (an activation, or a trial's first one): the device, the license and, where tokens are on, the token. */
export const activationAnswer = (activation: Activation & { token?: string }) => ({
  isValid: true as const,
  status: activation.status,
  ...(activation.token === undefined ? {} : { token: activation.token }),
  device: publicDeviceView(activation.device),
  license: publicLicenseView(activation.license),
});

/** Public API, called from client apps: no API key, the license key travels in the body. */
export const publicRoutes: FastifyPluginAsyncTypebox<PublicRoutesOptions> = async (app, { licenses, tokens, activity }) => {
  /** Validate's answer (heartbeat's too): always 200; an invalid license gives null fields and a reason. */
  const validationAnswer = (result: PublicValidation) => {
    if (!result.isValid) return { isValid: false, status: null, device: null, license: null, reason: result.reason };
    activity?.validated(result.license.accountId, result.license.productId);
    return { isValid: true, status: result.status, device: publicDeviceView(result.device), license: publicLicenseView(result.license) };
  };

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
      return activationAnswer(activation);
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
      return validationAnswer(await licenses.publicValidate(licenseKey, productId, deviceIdentifier));
    },
  );

  app.post(
    '/public/licenses/heartbeat',
    {
      schema: {
        tags,
        operationId: 'public-heartbeat',
        summary: "Renew a floating device's lease",
        description:
          'Answers as validate. On a floating product the lease is renewed to now + the lease length; a lapsed lease is device_not_activated (activate again). On a node-locked product it is a validation.',
        body: PublicLicenseQuery,
        response: { 200: PublicValidationResult, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (req) => {
      const { licenseKey, deviceIdentifier, productId } = req.body;
      return validationAnswer(await licenses.heartbeat(licenseKey, productId, deviceIdentifier));
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

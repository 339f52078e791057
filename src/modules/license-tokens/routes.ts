import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../http/schema-helpers.ts';
import { ProductParams } from '../products/schemas.ts';
import { KeyPairBody, PublicKeyResult, TokenConfigBody, TokenRequestBody, TokenResult, UpdateTokenConfigBody } from './schemas.ts';
import type { LicenseTokenService } from './service.ts';

const tags = ['License tokens'];
const security = [{ apiKey: [] }];
const configReply = { 200: TokenConfigBody, ...errorResponses(400, 401, 403, 404) };

/** Server API: a product's token settings and key pair (another account's product is a 404). */
export const licenseTokenRoutes: FastifyPluginAsyncTypebox<{ tokens: LicenseTokenService }> = async (app, { tokens }) => {
  app.get(
    '/products/:productId/license-token',
    { schema: { tags, security, operationId: 'get-license-token-settings', summary: "Get a product's license-token settings", params: ProductParams, response: configReply } },
    async (req) => tokens.getConfig(req.principal, req.params.productId),
  );

  app.put(
    '/products/:productId/license-token',
    {
      schema: {
        tags,
        security,
        operationId: 'update-license-token-settings',
        summary: "Change a product's license-token settings",
        description: 'Enabling the first time generates a P-256 key pair.',
        params: ProductParams,
        body: UpdateTokenConfigBody,
        response: configReply,
      },
    },
    async (req) => tokens.updateConfig(req.principal, req.params.productId, req.body),
  );

  app.post(
    '/products/:productId/license-token/key-pair',
    {
      schema: {
        tags,
        security,
        operationId: 'replace-license-token-key-pair',
        summary: 'Replace the key pair: new, copied from another product, or imported',
        description: 'Tokens signed with the previous key no longer verify against the new public key.',
        params: ProductParams,
        body: KeyPairBody,
        response: configReply,
      },
    },
    async (req) => tokens.replaceKeyPair(req.principal, req.params.productId, req.body),
  );
};

/** Public API (registered in its scope, modules/public/scope.ts): token refresh and the verification key. */
export const publicLicenseTokenRoutes: FastifyPluginAsyncTypebox<{ tokens: LicenseTokenService }> = async (app, { tokens }) => {
  const publicTags = ['Public'];

  app.post(
    '/public/licenses/token',
    {
      schema: {
        tags: publicTags,
        operationId: 'public-refresh-license-token',
        summary: 'Get a fresh license token for an activated device',
        body: TokenRequestBody,
        response: { 200: TokenResult, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (req) => {
      const { licenseKey, productId, deviceIdentifier } = req.body;
      const { token, status } = await tokens.refresh(licenseKey, productId, deviceIdentifier);
      return { isValid: true, status, token };
    },
  );

  app.get(
    '/public/products/:productId/license-token/public-key',
    {
      schema: {
        tags: publicTags,
        operationId: 'public-get-license-token-public-key',
        summary: "A product's token verification key",
        description: '404 when the product is unknown, its tokens are off or its key is not exposed.',
        params: ProductParams,
        response: { 200: PublicKeyResult, ...errorResponses(404, 429) },
      },
    },
    async (req) => ({ jwk: await tokens.publicKey(req.params.productId) }),
  );
};

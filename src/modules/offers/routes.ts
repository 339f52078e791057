import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { ProductParams } from '../products/schemas.ts';
import { CreateOfferBody, OfferParams, OfferReply, offerView } from './schemas.ts';
import type { OfferService } from './service.ts';

const tags = ['Offers'];
const security = [{ apiKey: [] }];

/** Server API: a product's renewal and upgrade offers (Stripe prices). */
export const offerRoutes: FastifyPluginAsyncTypebox<{ offers: OfferService }> = async (app, { offers }) => {
  app.post(
    '/products/:productId/offers',
    {
      schema: {
        tags,
        security,
        operationId: 'create-offer',
        summary: 'Offer a renewal or an upgrade',
        description:
          'At most 3 of each kind per product. A renewal has extendDays; an upgrade any of productId, maxDevices, licenseType (perpetual) and entitlements (the license then has exactly these). A completed checkout of the price for a license of this product (metadata tessera_license_key) applies it.',
        params: ProductParams,
        body: CreateOfferBody,
        response: { 200: OfferReply, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const { kind, licenseType, provider, ...rest } = req.body;
      return offerView(await offers.create(req.principal, req.params.productId, provider ?? 'stripe', { ...rest, kind: kind as 'renewal' | 'upgrade', licenseType: licenseType as 'perpetual' | undefined }));
    },
  );

  app.get(
    '/products/:productId/offers',
    { schema: { tags, security, operationId: 'list-offers', summary: "The product's offers", params: ProductParams, response: { 200: Type.Array(OfferReply), ...errorResponses(401, 403, 404) } } },
    async (req) => (await offers.list(req.principal, req.params.productId)).map(offerView),
  );

  app.delete(
    '/products/:productId/offers/:offerId',
    { schema: { tags, security, operationId: 'delete-offer', summary: 'Remove an offer', params: OfferParams, response: { 200: EmptyResponse, ...errorResponses(401, 403, 404) } } },
    async (req, reply) => {
      await offers.remove(req.principal, req.params.productId, req.params.offerId);
      return reply.send();
    },
  );
};

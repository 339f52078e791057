import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { CreateProductBody, ProductParams, productView, UpdateProductBody } from './schemas.ts';
import type { ProductService } from './service.ts';

const tags = ['Products'];
const security = [{ apiKey: [] }];
const productReply = { 200: Type.Ref('Product'), ...errorResponses(400, 401, 403, 404) };

/** Server API for products (API key required; another account's product is a 404). */
export const productRoutes: FastifyPluginAsyncTypebox<{ products: ProductService }> = async (app, { products }) => {
  app.post('/products', { schema: { tags, security, operationId: 'create-product', summary: 'Create a product', body: CreateProductBody, response: productReply } }, async (req) =>
    productView(await products.create(req.principal, req.body)),
  );

  app.get(
    '/products',
    { schema: { tags, security, operationId: 'list-products', summary: "List the account's products", response: { 200: Type.Array(Type.Ref('Product')), ...errorResponses(401, 403) } } },
    async (req) => (await products.list(req.principal)).map(productView),
  );

  app.get('/products/:productId', { schema: { tags, security, operationId: 'get-product', summary: 'Get a product', params: ProductParams, response: productReply } }, async (req) =>
    productView(await products.get(req.principal, req.params.productId)),
  );

  app.patch(
    '/products/:productId',
    { schema: { tags, security, operationId: 'update-product', summary: 'Update a product', params: ProductParams, body: UpdateProductBody, response: productReply } },
    async (req) => productView(await products.update(req.principal, req.params.productId, req.body)),
  );

  app.delete(
    '/products/:productId',
    {
      schema: {
        tags,
        security,
        operationId: 'delete-product',
        summary: 'Delete a product',
        description: 'Refused with 400 product_has_licenses while it has licenses, unless ?force=true deletes them with it.',
        params: ProductParams,
        querystring: Type.Object({ force: Type.Optional(Type.String({ enum: ['true', 'false'] })) }),
        response: { 200: EmptyResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      await products.delete(req.principal, req.params.productId, req.query.force === 'true');
      return reply.send();
    },
  );
};

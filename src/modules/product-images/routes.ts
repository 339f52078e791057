import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError, notFound } from '../../core/errors.ts';
import { EmptyResponse, errorResponses } from '../../http/schema-helpers.ts';
import { ProductParams, productView } from '../products/schemas.ts';
import { sendImage } from './image.ts';
import { IMAGE_MAX_BYTES, type ProductImageService } from './service.ts';

const tags = ['Products'];
const security = [{ apiKey: [] }];
const IMAGE_BODY = Type.Unsafe<Buffer>({ description: 'The raw image bytes: PNG, JPEG or WebP, at most 1 MiB.' });

/** Server API: upload and delete a product's image (plus plan). */
export const productImageRoutes: FastifyPluginAsyncTypebox<{ images: ProductImageService }> = async (app, { images }) => {
  // Any body type is read as bytes here: the image type is checked from the bytes themselves.
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: IMAGE_MAX_BYTES }, (_req, body, done) => done(null, body));

  app.put(
    '/products/:productId/image',
    {
      bodyLimit: IMAGE_MAX_BYTES,
      schema: {
        tags,
        security,
        operationId: 'upload-product-image',
        summary: "Upload the product's image",
        description: 'Raw PNG, JPEG or WebP bytes (type checked from the bytes), at most 1 MiB. Plus plan only (403 plan_required).',
        params: ProductParams,
        consumes: ['image/png', 'image/jpeg', 'image/webp'],
        body: IMAGE_BODY,
        response: { 200: Type.Ref('Product'), ...errorResponses(400, 401, 403, 404, 413, 415) },
      },
    },
    async (req) => {
      // A JSON (or form) body was parsed by its own parser: it is not an image.
      if (!Buffer.isBuffer(req.body) && req.headers['content-length'] && req.headers['content-length'] !== '0') {
        throw new AppError('unsupported_media_type', 'The image must be a PNG, JPEG or WebP file.');
      }
      const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      return productView(await images.put(req.principal, req.params.productId, bytes));
    },
  );

  app.delete(
    '/products/:productId/image',
    {
      schema: {
        tags,
        security,
        operationId: 'delete-product-image',
        summary: "Delete the product's image",
        params: ProductParams,
        response: { 200: EmptyResponse, ...errorResponses(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await images.remove(req.principal, req.params.productId);
      return reply.send();
    },
  );
};

/** Public (in the public API's scope): the image at a stable URL (purchase e-mails link to it), cacheable and revalidated by ETag. */
export const publicProductImageRoutes: FastifyPluginAsyncTypebox<{ images: ProductImageService }> = async (app, { images }) => {
  app.get(
    '/public/products/:productId/image',
    {
      schema: {
        tags: ['Public'],
        operationId: 'public-get-product-image',
        summary: "A product's image",
        description: 'The raw bytes with their type; cacheable, revalidated by ETag.',
        params: ProductParams,
        response: {
          200: Type.Unsafe<Buffer>({ description: 'The image: image/png, image/jpeg or image/webp bytes.' }),
          304: Type.Unsafe<void>({ description: 'Not modified: If-None-Match names the current ETag.' }),
          ...errorResponses(404),
        },
      },
    },
    async (req, reply) => {
      const image = await images.get(req.params.productId);
      if (!image) throw notFound('Image');
      return sendImage(req, reply, image);
    },
  );
};

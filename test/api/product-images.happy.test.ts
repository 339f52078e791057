import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport } from '../support/mail.ts';
import { JPEG, PNG, putImage, WEBP } from '../support/images.ts';
import { forEachStore } from '../support/stores.ts';


forEachStore('product images', (kind) => {
  const ctx = useTestApp(kind, { app: { mail: { transport: new CapturingTransport() } } });
  const put = (auth: Record<string, string>, productId: string, body: Buffer | string, type?: string) => putImage(ctx, auth, productId, body, type);
  const json = (res: { body: string }) => JSON.parse(res.body);

  it('stores a PNG, JPEG or WebP for a plus account and serves it at a stable, cacheable URL', async () => {
    const t = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, t);
    for (const [bytes, type] of [[JPEG, 'image/jpeg'], [WEBP, 'image/webp'], [PNG, 'image/png']] as const) {
      // The declared type does not matter: the bytes decide.
      const res = await put(t.auth, product.id, bytes, 'application/octet-stream');
      expect(res.statusCode).toBe(200);
      expect(json(res)).toMatchObject({ id: product.id, hasImage: true });
      const image = await ctx.app.inject({ method: 'GET', url: `/api/v1/public/products/${product.id}/image` });
      expect(image.statusCode).toBe(200);
      expect(image.headers['content-type']).toBe(type);
      expect(image.rawPayload.equals(bytes)).toBe(true);
      expect(image.headers['cache-control']).toBe('public, max-age=3600');
      expect(image.headers['x-content-type-options']).toBe('nosniff');
      const etag = image.headers.etag as string;
      const cached = await ctx.app.inject({ method: 'GET', url: `/api/v1/public/products/${product.id}/image`, headers: { 'if-none-match': etag } });
      expect(cached.statusCode).toBe(304);
      expect(cached.body).toBe('');
    }
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}`, headers: t.auth })).body.hasImage).toBe(true);
  });

  it('deletes the image: 200 empty, hasImage false, the URL answers 404', async () => {
    const t = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, t);
    await put(t.auth, product.id, PNG);
    const res = await call(ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/image`, headers: t.auth });
    expect(res.status).toBe(200);
    expect(res.raw.body).toBe('');
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}`, headers: t.auth })).body.hasImage).toBe(false);
    const gone = await call(ctx, { method: 'GET', url: `/api/v1/public/products/${product.id}/image` });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('not_found');
  });

  it('goes with its product when the product is deleted', async () => {
    const t = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, t);
    await put(t.auth, product.id, PNG);
    expect((await call(ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}`, headers: t.auth })).status).toBe(200);
    expect((await call(ctx, { method: 'GET', url: `/api/v1/public/products/${product.id}/image` })).status).toBe(404);
  });
});

import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5b5a0b40000000049454e44ae426082', 'hex');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(60, 1)]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(24, 2)]);

forEachStore('product images', (kind) => {
  const ctx = useTestApp(kind, { app: { mail: { transport: new CapturingTransport() } } });
  const put = (auth: Record<string, string>, productId: string, body: Buffer | string, type = 'image/png') =>
    ctx.app.inject({ method: 'PUT', url: `/api/v1/products/${productId}/image`, headers: { ...auth, 'content-type': type }, payload: body });
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

  it('refuses accounts on the free plan with 403 plan_required', async () => {
    const t = await createTenant(ctx, 'free');
    const product = await createProduct(ctx, t);
    const res = await put(t.auth, product.id, PNG);
    expect(res.statusCode).toBe(403);
    expect(json(res).error.code).toBe('plan_required');
    expect((await call(ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/image`, headers: t.auth })).body.error.code).toBe('plan_required');
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}`, headers: t.auth })).body.hasImage).toBe(false);
  });

  it('refuses bodies over 1 MiB (413), other types (415) and empty bodies (400), storing nothing', async () => {
    const t = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, t);
    const tooBig = await put(t.auth, product.id, Buffer.concat([PNG, Buffer.alloc(1024 * 1024)]));
    expect(tooBig.statusCode).toBe(413);
    expect(json(tooBig).error.code).toBe('payload_too_large');
    const gif = await put(t.auth, product.id, Buffer.from('GIF89a0000000000'), 'image/gif');
    expect(gif.statusCode).toBe(415);
    expect(json(gif).error.code).toBe('unsupported_media_type');
    const disguised = await put(t.auth, product.id, '<svg onload=alert(1)>', 'image/png');
    expect(disguised.statusCode).toBe(415);
    const asJson = await put(t.auth, product.id, '{"image":"x"}', 'application/json');
    expect(asJson.statusCode).toBe(415);
    const empty = await put(t.auth, product.id, Buffer.alloc(0));
    expect(empty.statusCode).toBe(400);
    expect(json(empty).error.code).toBe('invalid_request');
    expect((await call(ctx, { method: 'GET', url: `/api/v1/public/products/${product.id}/image` })).status).toBe(404);
  });

  it("keeps images per account: another account's product is a 404 either way", async () => {
    const owner = await createTenant(ctx, 'plus');
    const intruder = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, owner);
    expect((await put(owner.auth, product.id, PNG)).statusCode).toBe(200);
    const res = await put(intruder.auth, product.id, JPEG);
    expect(res.statusCode).toBe(404);
    expect((await call(ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/image`, headers: intruder.auth })).status).toBe(404);
    const served = await ctx.app.inject({ method: 'GET', url: `/api/v1/public/products/${product.id}/image` });
    expect(served.headers['content-type']).toBe('image/png');
    expect((await put(owner.auth, 'p_doesnotexist', PNG)).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'PUT', url: `/api/v1/products/${product.id}/image`, payload: PNG, headers: { 'content-type': 'image/png' } })).statusCode).toBe(401);
  });

  it('goes with its product when the product is deleted', async () => {
    const t = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, t);
    await put(t.auth, product.id, PNG);
    expect((await call(ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}`, headers: t.auth })).status).toBe(200);
    expect((await call(ctx, { method: 'GET', url: `/api/v1/public/products/${product.id}/image` })).status).toBe(404);
  });
});

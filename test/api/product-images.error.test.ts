import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport } from '../support/mail.ts';
import { PNG, putImage } from '../support/images.ts';
import { forEachStore } from '../support/stores.ts';


forEachStore('product images errors', (kind) => {
  const ctx = useTestApp(kind, { app: { mail: { transport: new CapturingTransport() } } });
  const put = (auth: Record<string, string>, productId: string, body: Buffer | string, type?: string) => putImage(ctx, auth, productId, body, type);
  const json = (res: { body: string }) => JSON.parse(res.body);

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
});

import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport } from '../support/mail.ts';
import { JPEG, PNG, putImage } from '../support/images.ts';
import { forEachStore } from '../support/stores.ts';


forEachStore('product images security', (kind) => {
  const ctx = useTestApp(kind, { app: { mail: { transport: new CapturingTransport() } } });
  const put = (auth: Record<string, string>, productId: string, body: Buffer | string, type?: string) => putImage(ctx, auth, productId, body, type);

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
});

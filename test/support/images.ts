import type { TestContext } from './app.ts';

/** A real 1×1 PNG; JPEG and WebP files are recognized by their first bytes, which is all that is checked. */
export const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5b5a0b40000000049454e44ae426082', 'hex');
export const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(60, 1)]);
export const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(24, 2)]);

export const putImage = (ctx: TestContext, auth: Record<string, string>, productId: string, body: Buffer | string, type = 'image/png') =>
  ctx.app.inject({ method: 'PUT', url: `/api/v1/products/${productId}/image`, headers: { ...auth, 'content-type': type }, payload: body });

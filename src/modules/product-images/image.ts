import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, invalidRequest } from '../../core/errors.ts';

/**
 * Uploaded images, for every image the service stores and serves (a product's, an account's logo):
 * the type read from the bytes, a size bound, and one way to serve them that no browser will run.
 */
export type ImageType = 'image/png' | 'image/jpeg' | 'image/webp';

export interface StoredImage {
  contentType: ImageType;
  data: Buffer;
  /** A strong validator derived from the bytes. */
  etag: string;
  updatedAt: number;
}

/** The type comes from the bytes, never from the declared Content-Type. */
export function detectImageType(bytes: Buffer): ImageType | undefined {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** Checks an upload (present, at most `maxBytes`, PNG, JPEG or WebP by its bytes) into what is stored. */
export function checkedImage(bytes: Buffer, maxBytes: number, sizeText: string, at: number): StoredImage {
  if (bytes.length === 0) throw invalidRequest('body', 'send the image bytes (PNG, JPEG or WebP)');
  if (bytes.length > maxBytes) throw new AppError('payload_too_large', `The image is larger than ${sizeText}.`);
  const contentType = detectImageType(bytes);
  if (!contentType) throw new AppError('unsupported_media_type', 'The image must be a PNG, JPEG or WebP file.');
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
  return { contentType, data: bytes, etag, updatedAt: at };
}

/**
 * Answers with a stored image: its checked type, cacheable and revalidated by ETag, and headers that
 * keep a browser from sniffing it into anything else or running anything in it.
 */
export function sendImage(req: FastifyRequest, reply: FastifyReply, image: StoredImage): FastifyReply {
  void reply
    .header('cache-control', 'public, max-age=3600')
    .header('etag', image.etag)
    .header('last-modified', new Date(image.updatedAt).toUTCString())
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'");
  if (req.headers['if-none-match'] === image.etag) return reply.status(304).send();
  return reply.type(image.contentType).send(image.data);
}

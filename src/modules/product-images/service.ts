import { createHash } from 'node:crypto';
import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import type { AccountService } from '../accounts/service.ts';
import type { Product, ProductService } from '../products/service.ts';

export const IMAGE_MAX_BYTES = 1024 * 1024;

export type ImageType = 'image/png' | 'image/jpeg' | 'image/webp';

export interface StoredImage {
  contentType: ImageType;
  data: Buffer;
  /** A strong validator derived from the bytes. */
  etag: string;
  updatedAt: number;
}

export interface ProductImageRepository {
  /** Stores the image and sets the product's hasImage in one unit; false when the product is not the caller's. */
  put(userId: string, productId: string, image: StoredImage): Promise<boolean>;
  remove(userId: string, productId: string): Promise<boolean>;
  get(productId: string): Promise<StoredImage | undefined>;
}

/** The type comes from the bytes, never from the declared Content-Type. */
export function detectImageType(bytes: Buffer): ImageType | undefined {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** Product images (plus plan): shown in purchase e-mails, served at a stable public URL. */
export class ProductImageService {
  constructor(
    private readonly repo: ProductImageRepository,
    private readonly products: ProductService,
    private readonly accounts: AccountService,
    private readonly clock: () => number = Date.now,
  ) {}

  async put(userId: string, productId: string, bytes: Buffer): Promise<Product> {
    await this.requirePlus(userId);
    if (bytes.length === 0) throw invalidRequest('body', 'send the image bytes (PNG, JPEG or WebP)');
    if (bytes.length > IMAGE_MAX_BYTES) throw new AppError('payload_too_large', 'The image is larger than 1 MiB.');
    const contentType = detectImageType(bytes);
    if (!contentType) throw new AppError('unsupported_media_type', 'The image must be a PNG, JPEG or WebP file.');
    const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
    if (!(await this.repo.put(userId, productId, { contentType, data: bytes, etag, updatedAt: this.clock() }))) throw notFound('Product');
    return this.products.get(userId, productId);
  }

  async remove(userId: string, productId: string): Promise<void> {
    await this.requirePlus(userId);
    if (!(await this.repo.remove(userId, productId))) throw notFound('Product');
  }

  get(productId: string): Promise<StoredImage | undefined> {
    return this.repo.get(productId);
  }

  private async requirePlus(userId: string): Promise<void> {
    const account = await this.accounts.findById(userId);
    if (account?.plan !== 'plus') throw new AppError('plan_required', 'Product images need the plus plan.');
  }
}

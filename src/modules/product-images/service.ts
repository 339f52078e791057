import { createHash } from 'node:crypto';
import { AppError, invalidRequest } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
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
  put(unit: Unit, productId: string, image: StoredImage): Promise<void>;
  remove(unit: Unit, productId: string): Promise<void>;
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
    private readonly units: UnitRunner,
    private readonly products: ProductService,
    private readonly accounts: AccountService,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Stores the image; the product's hasImage changes through the product service, in the same unit. */
  async put(principal: Principal, productId: string, bytes: Buffer): Promise<Product> {
    await this.requirePlus(principal);
    if (bytes.length === 0) throw invalidRequest('body', 'send the image bytes (PNG, JPEG or WebP)');
    if (bytes.length > IMAGE_MAX_BYTES) throw new AppError('payload_too_large', 'The image is larger than 1 MiB.');
    const contentType = detectImageType(bytes);
    if (!contentType) throw new AppError('unsupported_media_type', 'The image must be a PNG, JPEG or WebP file.');
    const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
    const image: StoredImage = { contentType, data: bytes, etag, updatedAt: this.clock() };
    return this.units.run(async (unit) => {
      await this.products.setHasImage(principal, productId, true, unit); // 404 unless the caller owns it
      await this.repo.put(unit, productId, image);
      return this.products.get(principal, productId, unit);
    });
  }

  async remove(principal: Principal, productId: string): Promise<void> {
    await this.requirePlus(principal);
    await this.units.run(async (unit) => {
      await this.products.setHasImage(principal, productId, false, unit);
      await this.repo.remove(unit, productId);
    });
  }

  get(productId: string): Promise<StoredImage | undefined> {
    return this.repo.get(productId);
  }

  private async requirePlus(principal: Principal): Promise<void> {
    const account = await this.accounts.findById(principal.accountId);
    if (account?.plan !== 'plus') throw new AppError('plan_required', 'Product images need the plus plan.');
  }
}

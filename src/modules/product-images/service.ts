import { AppError } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { AccountService } from '../accounts/service.ts';
import type { Product, ProductService } from '../products/service.ts';
import { checkedImage, type StoredImage } from './image.ts';

export const IMAGE_MAX_BYTES = 1024 * 1024;

export type { ImageType, StoredImage } from './image.ts';
export { detectImageType } from './image.ts';

export interface ProductImageRepository {
  put(unit: Unit, productId: string, image: StoredImage): Promise<void>;
  remove(unit: Unit, productId: string): Promise<void>;
  get(productId: string): Promise<StoredImage | undefined>;
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
    const image = checkedImage(bytes, IMAGE_MAX_BYTES, '1 MiB', this.clock());
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

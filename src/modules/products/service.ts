import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import { newProductId } from '../../core/ids.ts';
import { checkActionUrl } from '../../core/action-url.ts';

export interface Product {
  id: string;
  userId: string;
  name: string;
  description: string;
  supportEmail: string | null;
  createdAt: number;
  portalShow: boolean;
  portalAllowDeviceReset: boolean;
  hasImage: boolean;
  fallbackEnabled: boolean;
  purchaseNote: string | null;
  actionButtonText: string | null;
  actionButtonUrl: string | null;
  /** Portal device resets allowed per license within the window (operator API resets are not counted). */
  portalDeviceResetLimit: number;
  portalDeviceResetWindowDays: number;
}

/** Fields an operator writes; everything else is set by the service. */
export type ProductFields = Pick<
  Product,
  | 'name'
  | 'description'
  | 'supportEmail'
  | 'portalShow'
  | 'portalAllowDeviceReset'
  | 'fallbackEnabled'
  | 'purchaseNote'
  | 'actionButtonText'
  | 'actionButtonUrl'
  | 'portalDeviceResetLimit'
  | 'portalDeviceResetWindowDays'
>;

export interface ProductRepository {
  insert(product: Product): Promise<void>;
  get(userId: string, id: string): Promise<Product | undefined>;
  list(userId: string): Promise<Product[]>;
  update(userId: string, id: string, fields: Partial<ProductFields>): Promise<Product | undefined>;
  /** Deletes the product; with `force`, its licenses and devices too. Returns false when it still has licenses. */
  delete(userId: string, id: string, force: boolean): Promise<'deleted' | 'missing' | 'has_licenses'>;
}

const DEFAULTS: Omit<ProductFields, 'name'> = {
  description: '',
  supportEmail: null,
  portalShow: true,
  portalAllowDeviceReset: true,
  fallbackEnabled: false,
  purchaseNote: null,
  actionButtonText: null,
  actionButtonUrl: null,
  portalDeviceResetLimit: 3,
  portalDeviceResetWindowDays: 30,
};

function checkFields(fields: Partial<ProductFields>): Partial<ProductFields> {
  const out = { ...fields };
  if (out.name !== undefined) {
    out.name = out.name.trim();
    if (out.name.length === 0) throw invalidRequest('name', 'must not be empty');
  }
  if (out.actionButtonUrl) checkActionUrl(out.actionButtonUrl);
  return out;
}

export class ProductService {
  constructor(private readonly repo: ProductRepository) {}

  async create(userId: string, fields: Partial<ProductFields> & { name: string }): Promise<Product> {
    const product: Product = {
      ...DEFAULTS,
      ...(checkFields(fields) as ProductFields),
      id: newProductId(),
      userId,
      hasImage: false,
      createdAt: Date.now(),
    };
    await this.repo.insert(product);
    return product;
  }

  async get(userId: string, id: string): Promise<Product> {
    const product = await this.repo.get(userId, id);
    if (!product) throw notFound('Product');
    return product;
  }

  list(userId: string): Promise<Product[]> {
    return this.repo.list(userId);
  }

  async update(userId: string, id: string, fields: Partial<ProductFields>): Promise<Product> {
    const product = await this.repo.update(userId, id, checkFields(fields));
    if (!product) throw notFound('Product');
    return product;
  }

  async delete(userId: string, id: string, force: boolean): Promise<void> {
    const outcome = await this.repo.delete(userId, id, force);
    if (outcome === 'missing') throw notFound('Product');
    if (outcome === 'has_licenses') {
      throw new AppError('product_has_licenses', 'The product has licenses; delete them first or pass ?force=true.');
    }
  }
}

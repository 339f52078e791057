import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import { newProductId } from '../../core/ids.ts';
import { checkActionUrl } from '../../core/action-url.ts';
import { checkEntitlements } from '../../core/entitlements.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';

export interface Product {
  id: string;
  accountId: string;
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
  /** Entitlements a new license of the product gets unless it is given its own (core/entitlements.ts). */
  defaultEntitlements: string[];
  /** Floating seats: each activation holds its slot as a lease of `leaseSeconds`, renewed by heartbeats. */
  floating: FloatingSettings;
  /** Trials started from the public API: a timed license of `days` for `maxDevices`, one per device. */
  trial: TrialSettings;
}

export interface TrialSettings {
  enabled: boolean;
  days: number;
  maxDevices: number;
}

export interface FloatingSettings {
  enabled: boolean;
  leaseSeconds: number;
}

export const LEASE_SECONDS_MIN = 60;
export const LEASE_SECONDS_MAX = 86_400;
export const LEASE_SECONDS_DEFAULT = 900;

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
  | 'defaultEntitlements'
  | 'floating'
  | 'trial'
>;

/** What a PATCH sends: floating and trial settings may come one field at a time. */
export type ProductInput = Partial<Omit<ProductFields, 'floating' | 'trial'>> & { floating?: Partial<FloatingSettings>; trial?: Partial<TrialSettings> };

/** Storage of products; every query is scoped to the account in SQL, writes run in a unit. */
export interface ProductRepository {
  insert(unit: Unit, product: Product): Promise<void>;
  get(accountId: string, id: string, unit?: Unit): Promise<Product | undefined>;
  /** A product whatever its account (the public API's trials). */
  findAny(id: string, unit?: Unit): Promise<Product | undefined>;
  list(accountId: string): Promise<Product[]>;
  /** Locks the account's product against concurrent units until `unit` ends. */
  lock(unit: Unit, accountId: string, id: string): Promise<Product | undefined>;
  update(unit: Unit, accountId: string, id: string, fields: Partial<ProductFields> & { hasImage?: boolean }): Promise<void>;
  hasLicenses(unit: Unit, id: string): Promise<boolean>;
  delete(unit: Unit, accountId: string, id: string): Promise<void>;
}

/** What a product's forced delete needs of the license service (bound after both are built). */
export interface ProductLicenses {
  deleteAllOfProduct(principal: Principal, productId: string, unit: Unit): Promise<number>;
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
  defaultEntitlements: [],
  floating: { enabled: false, leaseSeconds: LEASE_SECONDS_DEFAULT },
  trial: { enabled: false, days: 14, maxDevices: 1 },
};

/** The input checked, its floating and trial settings completed from `current`. */
function checkFields(fields: ProductInput, current: Pick<ProductFields, 'floating' | 'trial'> = DEFAULTS): Partial<ProductFields> {
  const { floating, trial, ...rest } = fields;
  const out: Partial<ProductFields> = { ...rest };
  if (floating !== undefined) out.floating = { ...current.floating, ...floating };
  if (trial !== undefined) out.trial = { ...current.trial, ...trial };
  if (out.defaultEntitlements !== undefined) out.defaultEntitlements = checkEntitlements(out.defaultEntitlements, 'defaultEntitlements');
  if (out.name !== undefined) {
    out.name = out.name.trim();
    if (out.name.length === 0) throw invalidRequest('name', 'must not be empty');
  }
  if (out.actionButtonUrl) checkActionUrl(out.actionButtonUrl);
  return out;
}

/** Products: their fields, image flag and deletion rules, the one write path for each. */
export class ProductService {
  private licenses: ProductLicenses | undefined;

  constructor(
    private readonly repo: ProductRepository,
    private readonly units: UnitRunner,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The license service deletes a product's licenses (it needs this service too, so it comes later). */
  bindLicenses(licenses: ProductLicenses): void {
    this.licenses = licenses;
  }

  create(principal: Principal, fields: ProductInput & { name: string }): Promise<Product> {
    const product: Product = {
      ...DEFAULTS,
      ...(checkFields(fields) as ProductFields),
      id: newProductId(),
      accountId: principal.accountId,
      hasImage: false,
      createdAt: this.clock(),
    };
    return this.units.run(async (unit) => {
      await this.repo.insert(unit, product);
      return product;
    });
  }

  /** Any account's product, for the public API (trials): callers must reveal nothing of it but what the public may see. */
  findPublic(id: string, unit?: Unit): Promise<Product | undefined> {
    return this.repo.findAny(id, unit);
  }

  async get(principal: Principal, id: string, unit?: Unit): Promise<Product> {
    const product = await this.repo.get(principal.accountId, id, unit);
    if (!product) throw notFound('Product');
    return product;
  }

  list(principal: Principal): Promise<Product[]> {
    return this.repo.list(principal.accountId);
  }

  update(principal: Principal, id: string, fields: ProductInput): Promise<Product> {
    checkFields(fields); // a bad field is a 400 before any store is asked
    return this.units.run(async (unit) => {
      const product = await this.repo.lock(unit, principal.accountId, id);
      if (!product) throw notFound('Product');
      const checked = checkFields(fields, product);
      await this.repo.update(unit, principal.accountId, id, checked);
      return { ...product, ...checked };
    });
  }

  /** Sets whether the product has an image, in the image change's unit (the image module calls it). */
  async setHasImage(principal: Principal, id: string, hasImage: boolean, unit: Unit): Promise<void> {
    if (!(await this.repo.lock(unit, principal.accountId, id))) throw notFound('Product');
    await this.repo.update(unit, principal.accountId, id, { hasImage });
  }

  /** Refused while the product has licenses, unless `force`: then each goes through the license service. */
  async delete(principal: Principal, id: string, force: boolean): Promise<void> {
    await this.units.run(async (unit) => {
      if (!(await this.repo.lock(unit, principal.accountId, id))) throw notFound('Product');
      if (await this.repo.hasLicenses(unit, id)) {
        if (!force) throw new AppError('product_has_licenses', 'The product has licenses; delete them first or pass ?force=true.');
        await this.licenses!.deleteAllOfProduct(principal, id, unit);
      }
      await this.repo.delete(unit, principal.accountId, id);
    });
  }
}

import type { Unit } from '../../core/unit-of-work.ts';


export type OfferKind = 'renewal' | 'upgrade';

/** A renewal or upgrade of a product's one-time licenses, bought with one provider price. */
export interface Offer {
  id: string;
  accountId: string;
  productId: string;
  kind: OfferKind;
  name: string;
  provider: string;
  priceId: string;
  /** Renewal: days added to the later of now and the license's expiry. */
  extendDays: number | null;
  /** Upgrade: the product the license moves to (same account), keeping key and devices. */
  targetProductId: string | null;
  /** Upgrade: the license's new maxDevices. */
  maxDevices: number | null;
  /** Upgrade: `perpetual` clears the expiry. */
  licenseType: 'perpetual' | null;
  /** Upgrade: the license's entitlements become exactly these; null leaves them as they are. */
  entitlements: string[] | null;
  createdAt: number;
}

/** Storage of offers; every query scoped to the account. */
export interface OfferRepository {
  /** False when the product has an offer of that price already (the unique key decides). */
  insert(unit: Unit, offer: Offer): Promise<boolean>;
  /** How many offers of `kind` the product has, its rows locked until `unit` ends (the limit's check). */
  countLocked(unit: Unit, accountId: string, productId: string, kind: OfferKind): Promise<number>;
  list(accountId: string, productId: string): Promise<Offer[]>;
  delete(unit: Unit, accountId: string, productId: string, id: string): Promise<boolean>;
  /** The licenses among `licenseKeys` whose customer is `email` (of one account when given): the portal's. */
  customerLicenses(scope: { email: string; accountId: string | null }, licenseKeys: string[]): Promise<CustomerLicense[]>;
  /** The product's offer bought with one of these prices, the first by price order. */
  findByPrice(unit: Unit, accountId: string, productId: string, provider: string, priceIds: string[]): Promise<Offer | undefined>;
}

/** What choosing an offer needs of a customer's license. */
export interface CustomerLicense {
  key: string;
  accountId: string;
  productId: string;
  type: 'perpetual' | 'timed';
  expiresAt: number | null;
  email: string | null;
}

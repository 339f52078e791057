import { checkEntitlements } from '../../core/entitlements.ts';
import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import { randomBase62 } from '../../core/ids.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { LicenseService, UpdateLicenseInput } from '../licenses/service.ts';
import type { License, LicenseRecord } from '../licenses/types.ts';
import type { ProductService } from '../products/service.ts';
import type { CustomerLicense, Offer, OfferKind, OfferRepository } from './types.ts';

export interface OfferInput {
  kind: OfferKind;
  name: string;
  priceId: string;
  extendDays?: number;
  productId?: string;
  maxDevices?: number;
  licenseType?: 'perpetual';
  /** Upgrade: the license's entitlements become exactly these. */
  entitlements?: string[];
}

/** The fields only an upgrade has, in the order a 400 names the first one given. */
const UPGRADE_FIELDS = ['productId', 'maxDevices', 'licenseType', 'entitlements'] as const;

/** The e-mail "your license was renewed / upgraded" (the mail module's LifecycleMailer). */
export interface ExtendedMail {
  extended(principal: Principal, unit: Unit, mail: { to: string; kind: OfferKind; license: LicenseRecord }): Promise<void>;
}

/** At most this many offers of each kind per product (decisions.md). */
export const OFFERS_PER_KIND = 3;
const DAY = 86_400_000;
/** How close to its expiry a timed license is offered its renewals in the portal. */
export const RENEWAL_WINDOW_DAYS = 30;

const newOfferId = (): string => `off_${randomBase62(20)}`;

/**
 * Renewals and upgrades of one-time licenses (decisions.md, "Renewals and upgrades"): the offers of
 * each product, and applying one to a license when its checkout completes (the payments module
 * calls `apply` inside the purchase's unit).
 */
export class OfferService {
  constructor(
    private readonly repo: OfferRepository,
    private readonly units: UnitRunner,
    private readonly products: ProductService,
    private readonly licenses: LicenseService,
    private readonly mail: ExtendedMail,
    private readonly clock: () => number = Date.now,
  ) {}

  async create(principal: Principal, productId: string, provider: string, input: OfferInput): Promise<Offer> {
    await this.products.get(principal, productId);
    const name = input.name.trim();
    if (!name) throw invalidRequest('name', 'must not be blank');
    const priceId = input.priceId.trim();
    if (!priceId) throw invalidRequest('priceId', 'must not be blank');
    const upgradeField = UPGRADE_FIELDS.find((field) => input[field] !== undefined);
    const entitlements = input.entitlements === undefined ? null : checkEntitlements(input.entitlements, 'entitlements');
    if (input.kind === 'renewal') {
      if (input.extendDays === undefined) throw invalidRequest('extendDays', 'a renewal needs extendDays');
      if (upgradeField) throw invalidRequest(upgradeField, 'is for upgrades only');
    } else {
      if (input.extendDays !== undefined) throw invalidRequest('extendDays', 'is for renewals only');
      if (!upgradeField) throw invalidRequest('productId', 'an upgrade needs at least one of productId, maxDevices, licenseType and entitlements');
      if (input.productId === productId) throw invalidRequest('productId', 'must be another product');
      if (input.productId !== undefined) {
        await this.products.get(principal, input.productId).catch((error: unknown) => {
          throw error instanceof AppError && error.code === 'not_found' ? invalidRequest('productId', 'is not a product of this account') : error;
        });
      }
    }
    const offer: Offer = {
      id: newOfferId(),
      accountId: principal.accountId,
      productId,
      kind: input.kind,
      name,
      provider,
      priceId,
      extendDays: input.extendDays ?? null,
      targetProductId: input.productId ?? null,
      maxDevices: input.maxDevices ?? null,
      licenseType: input.licenseType ?? null,
      entitlements,
      createdAt: this.clock(),
    };
    await this.units.run(async (unit) => {
      await this.products.get(principal, productId, unit); // still there
      if ((await this.repo.countLocked(unit, principal.accountId, productId, input.kind)) >= OFFERS_PER_KIND) {
        throw invalidRequest('kind', `a product has at most ${OFFERS_PER_KIND} ${input.kind} offers`);
      }
      if (!(await this.repo.insert(unit, offer))) throw invalidRequest('priceId', 'the product has an offer of this price already');
    });
    return offer;
  }

  async list(principal: Principal, productId: string): Promise<Offer[]> {
    await this.products.get(principal, productId);
    return this.repo.list(principal.accountId, productId);
  }

  async remove(principal: Principal, productId: string, offerId: string): Promise<void> {
    const removed = await this.units.run((unit) => this.repo.delete(unit, principal.accountId, productId, offerId));
    if (!removed) throw notFound('Offer');
  }

  /** The customer's licenses among `licenseKeys`, each with the offers it qualifies for now (the portal). */
  async customerOffers(scope: { email: string; accountId: string | null }, licenseKeys: string[]): Promise<Map<string, { license: CustomerLicense; offers: Offer[] }>> {
    const found = new Map<string, { license: CustomerLicense; offers: Offer[] }>();
    for (const license of await this.repo.customerLicenses(scope, licenseKeys)) {
      const offers = await this.qualifying(license);
      if (offers.length) found.set(license.key, { license, offers });
    }
    return found;
  }

  /** The offers a license qualifies for now: renewals for a timed license expired or expiring within 30 days; upgrades always. */
  async qualifying(license: Pick<LicenseRecord, 'accountId' | 'productId' | 'type' | 'expiresAt'>): Promise<Offer[]> {
    const offers = await this.repo.list(license.accountId, license.productId);
    const now = this.clock();
    const renewable = license.type === 'timed' && license.expiresAt !== null && license.expiresAt <= now + RENEWAL_WINDOW_DAYS * DAY;
    return offers.filter((o) => o.kind === 'upgrade' || renewable);
  }

  /** The license's product's offer of one of these prices, in the caller's unit. */
  find(unit: Unit, license: LicenseRecord, provider: string, priceIds: string[]): Promise<Offer | undefined> {
    return this.repo.findByPrice(unit, license.accountId, license.productId, provider, priceIds);
  }

  /**
   * The offer's change to the license, in the caller's unit: a renewal sets `expiresAt` to the later
   * of now and its expiry, plus `extendDays` (timed licenses only: undefined for a perpetual one);
   * an upgrade moves product, devices and type, and sets exactly its entitlements when it has any
   * (else the license keeps its own, product move or not). The license service records and announces it (audit,
   * webhooks); the customer (`to`) is e-mailed in the same unit.
   */
  async apply(unit: Unit, principal: Principal, license: License, offer: Offer, to: string | null): Promise<License | undefined> {
    const change: UpdateLicenseInput = {};
    if (offer.kind === 'renewal') {
      if (license.type !== 'timed') return undefined;
      const from = Math.max(this.clock(), license.expiresAt ?? 0);
      change.expiresAt = new Date(from + offer.extendDays! * DAY).toISOString();
    } else {
      if (offer.targetProductId !== null) change.productId = offer.targetProductId;
      if (offer.maxDevices !== null) change.maxDevices = offer.maxDevices;
      if (offer.licenseType === 'perpetual') {
        change.type = 'perpetual';
        change.expiresAt = null;
      }
      if (offer.entitlements !== null) change.entitlements = offer.entitlements;
    }
    const updated = await this.licenses.update(principal, license.key, change, unit);
    if (to) await this.mail.extended(principal, unit, { to, kind: offer.kind, license: updated });
    return updated;
  }
}

import { AppError, notFound } from '../../core/errors.ts';
import type { SubscriptionSnapshot } from '../../core/events.ts';
import { normalizeLicenseKey } from '../../core/license-key.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import { type LicenseService, snapshot, type UpdateLicenseInput } from '../licenses/service.ts';
import type { License, LicenseRecord } from '../licenses/types.ts';
import type { ProductService } from '../products/service.ts';
import type { Subscription, SubscriptionItem } from '../payments/provider.ts';
import { hasEnded, subscriptionExpiresAt } from './expiry.ts';
import type { CustomerLink, SubscriptionLink, SubscriptionRef, SubscriptionRepository, SubscriptionState } from './types.ts';

/** What applying needs of a price mapping (payments' PriceMapping fits). */
export interface SubscriptionPlan {
  productId: string;
  maxDevices: number;
  graceDays: number | null;
  /** What its licenses unlock; null: the product's default entitlements. */
  entitlements: string[] | null;
}

/** The e-mail telling a customer their renewal payment failed (the mail module's LifecycleMailer). */
export interface PaymentFailedMail {
  queue(principal: Principal, unit: Unit, mail: { to: string; licenses: LicenseRecord[]; payUrl: string | null }): Promise<void>;
}

/** How many times a unit starts again after another unit applied the subscription meanwhile. */
const FOLLOW_ATTEMPTS = 20;
const MAX_DEVICES = 100_000;
export const DEFAULT_GRACE_DAYS = 7;

/** Another unit applied the subscription after this one asked the provider: ask again. */
const STALE: unique symbol = Symbol('stale');

const snapshotOf = (s: Pick<SubscriptionState, 'provider' | 'subscriptionId' | 'status' | 'currentPeriodEnd' | 'cancelAtPeriodEnd'>): SubscriptionSnapshot => ({
  provider: s.provider,
  id: s.subscriptionId,
  status: s.status,
  currentPeriodEnd: s.currentPeriodEnd,
  cancelAtPeriodEnd: s.cancelAtPeriodEnd,
});

/**
 * Which item each license follows: its own item while the subscription has it; a license whose
 * item is gone (a plan change that replaced the item) takes an item no license follows, mapped ones
 * first. A license with no item left keeps its product and follows the subscription's period.
 */
function pairItems(links: SubscriptionLink[], items: SubscriptionItem[], mapped: (item: SubscriptionItem) => boolean): Map<string, SubscriptionItem | undefined> {
  const byId = new Map(items.map((i) => [i.id, i]));
  const taken = new Set(links.flatMap((l) => (byId.has(l.itemId) ? [l.itemId] : [])));
  const free = items.filter((i) => !taken.has(i.id)).sort((a, b) => Number(mapped(b)) - Number(mapped(a)));
  return new Map(links.map((l) => [l.licenseKey, byId.get(l.itemId) ?? free.shift()]));
}

/**
 * Licenses that follow a provider subscription (decisions.md, "Subscriptions"). Every event about a
 * subscription applies its current state as the provider reports it, never the event's own copy, so
 * late, doubled and out-of-order events converge. Written against the provider seam only.
 */
export class SubscriptionService {
  constructor(
    private readonly repo: SubscriptionRepository,
    private readonly units: UnitRunner,
    private readonly licenses: LicenseService,
    private readonly products: ProductService,
    private readonly mail: PaymentFailedMail,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Asks the provider for the subscription (`fetch`) and runs `work` with it in one unit, which then
   * records that state. A unit that finds the subscription applied by another unit since it asked
   * (the version moved) starts again with a fresh state: whichever unit commits last has applied a
   * state asked for after every earlier commit, so concurrent and out-of-order events converge.
   * `eventId` makes the whole thing happen once per provider event; `done` tells, before each
   * attempt, that another delivery did the work already (a checkout's purchase recorded).
   */
  async follow<T>(
    ref: SubscriptionRef,
    fetch: () => Promise<Subscription | null>,
    work: (unit: Unit, sub: Subscription | null, previous: SubscriptionState | undefined) => Promise<T>,
    options: { eventId?: string; done?: () => Promise<boolean> } = {},
  ): Promise<T | 'duplicate'> {
    const { eventId, done } = options;
    for (let attempt = 1; ; attempt++) {
      if (eventId && (await this.repo.eventSeen(ref.accountId, ref.provider, eventId))) return 'duplicate';
      if (done && (await done())) return 'duplicate';
      const seen = await this.repo.version(ref);
      const sub = await fetch();
      const outcome = await this.units.run(async (unit): Promise<T | 'duplicate' | typeof STALE> => {
        const previous = await this.repo.lockState(unit, ref);
        if ((previous?.version ?? 0) !== seen) return STALE;
        if (eventId && !(await this.repo.recordEvent(unit, ref.accountId, ref.provider, eventId, this.clock()))) return 'duplicate';
        const result = await work(unit, sub, previous);
        if (sub) await this.repo.saveState(unit, this.stateOf(ref, sub, seen + 1));
        return result;
      });
      if (outcome !== STALE) return outcome;
      if (attempt === FOLLOW_ATTEMPTS) throw new AppError('internal_error', 'The subscription kept changing while it was applied; retry later.');
    }
  }

  private stateOf(ref: SubscriptionRef, sub: Subscription, version: number): SubscriptionState {
    const period = sub.status === 'trialing' && sub.trialEnd !== null ? sub.trialEnd : (sub.items[0]?.currentPeriodEnd ?? null);
    return { ...ref, customerId: sub.customerId, status: sub.status, currentPeriodEnd: period, cancelAtPeriodEnd: sub.cancelAtPeriodEnd, version, updatedAt: this.clock() };
  }

  /** A new license's expiry for `item` of the subscription (checkout in subscription mode). */
  expiryFor(sub: Subscription, item: SubscriptionItem, plan: SubscriptionPlan): number | null {
    return subscriptionExpiresAt(sub, item, plan.graceDays ?? DEFAULT_GRACE_DAYS);
  }

  /** Links a license just created for `item` (in the unit that created it). */
  link(unit: Unit, ref: SubscriptionRef, licenseKey: string, item: SubscriptionItem, plan: SubscriptionPlan): Promise<void> {
    return this.repo.insertLink(unit, { ...ref, licenseKey, itemId: item.id, priceId: item.priceId ?? '', graceDays: plan.graceDays ?? DEFAULT_GRACE_DAYS, createdAt: this.clock() });
  }

  /**
   * The subscription's current state onto its linked licenses: expiry by the one rule; a mapped
   * price's product and devices (× quantity); on a plan change (the item's price is another than the
   * one the license was last given) the new mapping's entitlements too. A price with no mapping changes neither (logged by the
   * caller from the outcome). Emits the subscription's event for each license whose subscription
   * renewed, changed or ended. Returns the number of licenses followed and the unmapped prices met.
   */
  async apply(
    unit: Unit,
    principal: Principal,
    ref: SubscriptionRef,
    sub: Subscription | null,
    previous: SubscriptionState | undefined,
    plans: Map<string, SubscriptionPlan>,
  ): Promise<{ licenses: number; unmappedPrices: string[] }> {
    const links = await this.repo.links(unit, ref);
    // Gone at the provider (a deleted test-mode subscription): nothing to go by; the licenses stay as they are.
    if (links.length === 0 || !sub) return { licenses: 0, unmappedPrices: [] };
    const now = this.clock();
    const pairs = pairItems(links, sub.items, (i) => i.priceId !== null && plans.has(i.priceId));
    const after = snapshotOf(this.stateOf(ref, sub, 0));
    const type = this.eventType(previous, after, sub);
    const unmapped = new Set<string>();
    for (const link of links) {
      const item = pairs.get(link.licenseKey);
      const plan = item?.priceId ? plans.get(item.priceId) : undefined;
      if (item?.priceId && !plan) unmapped.add(item.priceId);
      const graceDays = plan ? (plan.graceDays ?? DEFAULT_GRACE_DAYS) : link.graceDays;
      const expiresAt = subscriptionExpiresAt(sub, item, graceDays);
      const change: UpdateLicenseInput = { type: 'timed', ...(expiresAt !== null && { expiresAt: new Date(expiresAt).toISOString() }) };
      if (plan) {
        change.productId = plan.productId;
        change.maxDevices = Math.min(MAX_DEVICES, plan.maxDevices * Math.max(1, item!.quantity));
        // Only when the plan changed: every renewal re-applying them would undo an operator's edit.
        if (item!.priceId !== link.priceId) change.entitlements = await this.entitlementsOf(principal, plan, unit);
      }
      const license = await this.updateLicense(principal, link.licenseKey, change, unit);
      if (!license) continue;
      if (item && plan && (item.id !== link.itemId || item.priceId !== link.priceId || graceDays !== link.graceDays)) {
        await this.repo.updateLink(unit, link.licenseKey, { itemId: item.id, priceId: item.priceId!, graceDays });
      }
      if (type) await unit.emit({ type, actor: principal.actor, occurredAt: now, license: snapshot(license), subscription: after });
    }
    return { licenses: links.length, unmappedPrices: [...unmapped] };
  }

  /** Which subscription event a state change is: none when nothing the view shows changed (a redelivery, a first state). */
  private eventType(previous: SubscriptionState | undefined, after: SubscriptionSnapshot, sub: Subscription) {
    if (!previous) return hasEnded(sub) ? ('subscription.canceled' as const) : undefined;
    const before = snapshotOf(previous);
    if (hasEnded(sub)) return hasEnded(previous) ? undefined : ('subscription.canceled' as const);
    const live = sub.status === 'active' || sub.status === 'trialing';
    const later = after.currentPeriodEnd !== null && before.currentPeriodEnd !== null && after.currentPeriodEnd > before.currentPeriodEnd;
    // A later period paid, or a late payment that brought an unpaid period back: renewed.
    if (live && (later || before.status === 'past_due' || before.status === 'unpaid')) return 'subscription.renewed' as const;
    const same = before.status === after.status && before.cancelAtPeriodEnd === after.cancelAtPeriodEnd && before.currentPeriodEnd === after.currentPeriodEnd;
    return same ? undefined : ('subscription.updated' as const);
  }

  /** A plan's entitlements, as a new license of its price gets them: the mapping's, else its product's defaults. */
  private async entitlementsOf(principal: Principal, plan: SubscriptionPlan, unit: Unit): Promise<string[]> {
    return plan.entitlements ?? (await this.products.get(principal, plan.productId, unit)).defaultEntitlements;
  }

  private async updateLicense(principal: Principal, key: string, change: UpdateLicenseInput, unit: Unit): Promise<License | undefined> {
    try {
      return await this.licenses.update(principal, key, change, unit);
    } catch (error) {
      // Deleted meanwhile (its link went with it): nothing left to follow.
      if (error instanceof AppError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  /**
   * A renewal payment failed: one e-mail to the customer (the provider's billing address, else the
   * first license's) with where to pay or fix the payment method, and a subscription.payment_failed
   * event per linked license. No license changes: the expiry rule already gives the grace days.
   */
  async paymentFailed(unit: Unit, principal: Principal, ref: SubscriptionRef, failed: { email: string | null; payUrl: string | null }): Promise<number> {
    const links = await this.repo.links(unit, ref);
    const licenses: License[] = [];
    for (const link of links) {
      const license = await this.licenses.get(principal, link.licenseKey, unit).catch(() => undefined);
      if (license) licenses.push(license);
    }
    if (licenses.length === 0) return 0;
    const state = await this.repo.lockState(unit, ref);
    const subscription = state ? snapshotOf(state) : { provider: ref.provider, id: ref.subscriptionId, status: 'past_due', currentPeriodEnd: null, cancelAtPeriodEnd: false };
    const to = failed.email ?? licenses.find((l) => l.email)?.email ?? null;
    if (to) await this.mail.queue(principal, unit, { to, licenses, payUrl: failed.payUrl });
    const now = this.clock();
    for (const license of licenses) await unit.emit({ type: 'subscription.payment_failed', actor: principal.actor, occurredAt: now, license: snapshot(license), subscription });
    return licenses.length;
  }

  /** False when the provider event was applied already (then the caller does nothing). */
  recordEvent(unit: Unit, ref: SubscriptionRef, eventId: string): Promise<boolean> {
    return this.repo.recordEvent(unit, ref.accountId, ref.provider, eventId, this.clock());
  }

  /** Unlinks the license: later events about its subscription leave it alone. 404 when it follows none. */
  async unlink(principal: Principal, rawKey: string): Promise<void> {
    const key = normalizeLicenseKey(rawKey);
    await this.licenses.get(principal, key); // 404 unless the caller owns it
    const removed = await this.units.run((unit) => this.repo.deleteLink(unit, principal.accountId, key));
    if (!removed) throw notFound('Subscription');
  }

  /** The subscriptions of these licenses that `scope`'s customer may manage (the portal). */
  customerLinks(scope: { email: string; accountId: string | null }, licenseKeys: string[]): Promise<CustomerLink[]> {
    return this.repo.customerLinks(scope, licenseKeys.map(normalizeLicenseKey));
  }

  /** license key → its subscription, for the account's licenses that follow one. */
  async snapshots(accountId: string, keys: string[]): Promise<Map<string, SubscriptionSnapshot & { customerId: string | null }>> {
    return this.repo.snapshotsOf(accountId, keys.map(normalizeLicenseKey));
  }
}

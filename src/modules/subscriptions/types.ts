import type { SubscriptionSnapshot } from '../../core/events.ts';
import type { Unit } from '../../core/unit-of-work.ts';

/** A license following one item of a provider subscription. */
export interface SubscriptionLink {
  licenseKey: string;
  accountId: string;
  provider: string;
  subscriptionId: string;
  itemId: string;
  priceId: string;
  /** The grace of the mapping last applied: kept when the item's price loses its mapping. */
  graceDays: number;
  createdAt: number;
}

/** A subscription as last applied, with the version that orders the units applying it. */
export interface SubscriptionState {
  accountId: string;
  provider: string;
  subscriptionId: string;
  customerId: string | null;
  status: string;
  currentPeriodEnd: number | null;
  cancelAtPeriodEnd: boolean;
  version: number;
  updatedAt: number;
}

export interface SubscriptionRef {
  accountId: string;
  provider: string;
  subscriptionId: string;
}

/** Storage of subscriptions, their links and the provider events applied; every query scoped to the account. */
export interface SubscriptionRepository {
  /** The version last applied (0 when the subscription was never seen): read before asking the provider. */
  version(ref: SubscriptionRef): Promise<number>;
  /** The state, with every other unit about this subscription kept out until `unit` ends. */
  lockState(unit: Unit, ref: SubscriptionRef): Promise<SubscriptionState | undefined>;
  saveState(unit: Unit, state: SubscriptionState): Promise<void>;
  links(unit: Unit, ref: SubscriptionRef): Promise<SubscriptionLink[]>;
  insertLink(unit: Unit, link: SubscriptionLink): Promise<void>;
  updateLink(unit: Unit, licenseKey: string, fields: Pick<SubscriptionLink, 'itemId' | 'priceId' | 'graceDays'>): Promise<void>;
  deleteLink(unit: Unit, accountId: string, licenseKey: string): Promise<boolean>;
  /** license key → its subscription, for the account's licenses that have one. */
  snapshotsOf(accountId: string, licenseKeys: string[], unit?: Unit): Promise<Map<string, SubscriptionSnapshot & { customerId: string | null }>>;
  /** The subscriptions of these licenses whose customer is `email` (of one account when given): what the portal may manage. */
  customerLinks(scope: { email: string; accountId: string | null }, licenseKeys: string[]): Promise<CustomerLink[]>;
  /** False when the event was applied already (the primary key decides, also under concurrency). */
  recordEvent(unit: Unit, accountId: string, provider: string, eventId: string, now: number): Promise<boolean>;
  eventSeen(accountId: string, provider: string, eventId: string): Promise<boolean>;
}

/** A license's subscription as its customer reaches it in the portal. */
export interface CustomerLink {
  licenseKey: string;
  accountId: string;
  provider: string;
  customerId: string | null;
}

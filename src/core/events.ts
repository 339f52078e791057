import type { Actor } from './principal.ts';

/** A license as events carry it (times in epoch milliseconds). */
export interface LicenseSnapshot {
  key: string;
  accountId: string;
  productId: string;
  type: 'perpetual' | 'timed';
  expiresAt: number | null;
  revoked: boolean;
  email: string | null;
  maxDevices: number;
  createdAt: number;
  entitlements: string[];
  trial: boolean;
  /** The vendor's data (server views and webhooks only). */
  metadata: Record<string, string>;
}

/**
 * The activation that put a device on its license, kept with the device while it is active: who
 * activated it, the name it had then, and the id of its audit entry. The device's row holds that
 * entry until the device goes (docs/decisions/audit-held-entries.md).
 */
export interface DeviceActivation {
  /** The audit entry's id (time-ordered: it carries the time of the activation's event). */
  id: string;
  actor: Actor;
  name: string;
}

export interface DeviceSnapshot {
  identifier: string;
  name: string;
  activationDate: number;
  /** A floating product's lease end, when the device holds one. */
  leaseExpiresAt?: number | null;
  /** Set when the device's row holds its activation's audit entry (see DeviceActivation). */
  activation?: DeviceActivation;
}

/** Which fields an update changed, with their values before and after. */
export type LicenseChanges = Partial<{ [K in keyof LicenseSnapshot]: { from: LicenseSnapshot[K]; to: LicenseSnapshot[K] } }>;

interface Base {
  actor: Actor;
  /** Epoch milliseconds, from the service's clock. */
  occurredAt: number;
}

interface LicenseBase extends Base {
  license: LicenseSnapshot;
}

/** A purchase at a payment provider as events carry it (amounts in the currency's minor unit). */
export interface PurchaseSnapshot {
  id: string;
  accountId: string;
  provider: string;
  sessionId: string;
  email: string | null;
  amountTotal: number | null;
  currency: string | null;
  /** `unmatched`: a renewal or upgrade checkout whose license or offer is not this account's. */
  status: 'fulfilled' | 'unmapped' | 'unmatched' | 'refunded' | 'disputed';
  kind: 'new' | 'renewal' | 'upgrade' | 'subscription';
  licenseKeys: string[];
  hasInvoice: boolean;
  createdAt: number;
}

interface PurchaseBase extends Base {
  purchase: PurchaseSnapshot;
}

export type LicenseEvent =
  | (LicenseBase & { type: 'license.created' })
  | (LicenseBase & { type: 'license.updated'; changes: LicenseChanges })
  | (LicenseBase & { type: 'license.deleted'; devices: DeviceSnapshot[] })
  | (LicenseBase & { type: 'device.activated'; device: DeviceSnapshot })
  /** An active device re-activated under another name (its slot and activation date kept). */
  | (LicenseBase & { type: 'device.updated'; device: DeviceSnapshot; changes: { name: { from: string; to: string } } })
  | (LicenseBase & { type: 'device.removed'; device: DeviceSnapshot })
  /** A floating license's device whose lease lapsed, removed to free its slot (actor `lease`). */
  | (LicenseBase & { type: 'device.released'; device: DeviceSnapshot })
  | (LicenseBase & { type: 'devices.reset'; devices: DeviceSnapshot[] });

/** A provider subscription as events and license views carry it (times epoch ms). */
export interface SubscriptionSnapshot {
  provider: string;
  id: string;
  status: string;
  currentPeriodEnd: number | null;
  cancelAtPeriodEnd: boolean;
}

/**
 * A linked license's subscription renewed (a later period), changed (status, plan, quantity,
 * cancellation), ended, or failed to renew its payment. The license's own change is its
 * license.updated beside it.
 */
export type SubscriptionEvent = LicenseBase & {
  type: 'subscription.renewed' | 'subscription.updated' | 'subscription.canceled' | 'subscription.payment_failed';
  subscription: SubscriptionSnapshot;
};

/** A purchase recorded (fulfilled or unmapped), or reversed by a refund or a dispute (its licenses revoked). */
export type PurchaseEvent = (PurchaseBase & { type: 'purchase.completed' }) | (PurchaseBase & { type: 'purchase.refunded'; reason: 'refunded' | 'disputed' });

/**
 * What changed, emitted inside the unit of work that made the change: subscribers (the outbox,
 * later webhooks and the audit log) write what they need in that same unit, so an event exists
 * exactly when its change committed. License events carry the license; purchase events a plain
 * `purchase` snapshot.
 */
export type DomainEvent = LicenseEvent | PurchaseEvent | SubscriptionEvent;

export type DomainEventType = DomainEvent['type'];

export const DOMAIN_EVENT_TYPES: readonly DomainEventType[] = [
  'license.created',
  'license.updated',
  'license.deleted',
  'device.activated',
  'device.updated',
  'device.removed',
  'device.released',
  'devices.reset',
  'purchase.completed',
  'purchase.refunded',
  'subscription.renewed',
  'subscription.updated',
  'subscription.canceled',
  'subscription.payment_failed',
];

export const isLicenseEvent = (event: DomainEvent): event is LicenseEvent => 'license' in event && !('subscription' in event);

/** The account an event belongs to: whose webhooks and audit log it reaches. */
export const eventAccountId = (event: DomainEvent): string => ('license' in event ? event.license.accountId : event.purchase.accountId);

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
}

export interface DeviceSnapshot {
  identifier: string;
  name: string;
  activationDate: number;
}

/** Which fields an update changed, with their values before and after. */
export type LicenseChanges = Partial<{ [K in keyof LicenseSnapshot]: { from: LicenseSnapshot[K]; to: LicenseSnapshot[K] } }>;

interface Base {
  actor: Actor;
  /** Epoch milliseconds, from the service's clock. */
  occurredAt: number;
  license: LicenseSnapshot;
}

/**
 * What changed, emitted inside the unit of work that made the change: subscribers (the outbox,
 * later webhooks and the audit log) write what they need in that same unit, so an event exists
 * exactly when its change committed.
 */
export type DomainEvent =
  | (Base & { type: 'license.created' })
  | (Base & { type: 'license.updated'; changes: LicenseChanges })
  | (Base & { type: 'license.deleted' })
  | (Base & { type: 'device.activated'; device: DeviceSnapshot })
  | (Base & { type: 'device.removed'; device: DeviceSnapshot })
  | (Base & { type: 'devices.reset'; devices: DeviceSnapshot[] });

export type DomainEventType = DomainEvent['type'];

export const DOMAIN_EVENT_TYPES: readonly DomainEventType[] = [
  'license.created',
  'license.updated',
  'license.deleted',
  'device.activated',
  'device.removed',
  'devices.reset',
];

/** The account an event belongs to: whose webhooks and audit log it reaches. */
export const eventAccountId = (event: DomainEvent): string => event.license.accountId;

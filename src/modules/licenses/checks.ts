import { AppError } from '../../core/errors.ts';
import { type LicenseStatus, licenseStatus } from '../../core/license-status.ts';
import type { LicenseRecord } from './types.ts';

/**
 * License validation as one ordered list of checks (the first failure decides). Activation,
 * public and server validation, token refresh and public device removal all run this list;
 * each names the checks it needs. Precedence (decisions.md, "Activation checks, in order"):
 * the license must exist and belong to the asked product before anything about its state is
 * told, so a revoked license asked with another product's id is `product_mismatch`, not
 * `revoked`: a caller learns nothing about a license of a product it did not name.
 */
export type Failure = 'not_found' | 'product_mismatch' | 'revoked' | 'expired' | 'device_not_activated' | 'max_devices_reached';

export interface Subject<L extends LicenseRecord = LicenseRecord> {
  license: L | undefined;
  fallbackEnabled: boolean;
  /** Whether the asking device is on the license, when a device is part of the question. */
  deviceActive?: boolean;
  /**
   * The asking device's lease end on a floating product (null or absent: node-locked). A lapsed lease
   * is no activation: the device holds no slot, and validation, tokens and heartbeats for it fail as
   * `device_not_activated` (decisions.md, "Floating licenses").
   */
  leaseExpiresAt?: number | null;
  /** Devices holding a slot (live leases only): only activation needs (and reads) them. */
  activeDeviceCount?: number;
}

export interface Question {
  /** The products the caller accepts; absent: any (server validate without productId). */
  productIds?: readonly string[];
  /** Validation and tokens need the device to be active already. */
  requireActiveDevice?: boolean;
  /** Activation needs a free slot unless the device holds one. */
  needsSlot?: boolean;
  now: number;
}

type Checked = Subject & { license: LicenseRecord; status: LicenseStatus };
type Check = readonly [Failure, (s: Checked, q: Question) => boolean];

/** The asking device holds a slot: it is on the license, and its lease (if any) has not lapsed. */
const holdsSlot = (s: Checked, now: number): boolean => s.deviceActive === true && (s.leaseExpiresAt == null || s.leaseExpiresAt > now);

export const CHECKS: readonly Check[] = [
  ['product_mismatch', (s, q) => q.productIds !== undefined && !q.productIds.includes(s.license.productId)],
  ['revoked', (s) => s.status === 'revoked'],
  // A trial is a timed license flagged trial: its end is this check, with no status of its own.
  ['expired', (s) => s.status === 'expired'],
  // A lapsed lease (floating products) is no activation: see holdsSlot.
  ['device_not_activated', (s, q) => q.requireActiveDevice === true && !holdsSlot(s, q.now)],
  ['max_devices_reached', (s, q) => q.needsSlot === true && !holdsSlot(s, q.now) && s.activeDeviceCount! >= s.license.maxDevices],
];

/** `status` is the license's status whenever the license exists, whichever check failed. */
export type Verdict<L extends LicenseRecord = LicenseRecord> =
  | { ok: true; status: LicenseStatus; license: L }
  | { ok: false; failure: Failure; status: LicenseStatus | null };

export function evaluate<L extends LicenseRecord>(subject: Subject<L>, question: Question): Verdict<L> {
  const license = subject.license;
  if (!license) return { ok: false, failure: 'not_found', status: null };
  if (question.needsSlot && subject.activeDeviceCount === undefined) throw new Error('The slot check needs the active device count');
  const status = licenseStatus(license, subject.fallbackEnabled, question.now);
  // Built field by field, not spread: one object shape whichever fields the caller passed.
  const s: Checked = {
    license,
    fallbackEnabled: subject.fallbackEnabled,
    deviceActive: subject.deviceActive,
    leaseExpiresAt: subject.leaseExpiresAt,
    activeDeviceCount: subject.activeDeviceCount,
    status,
  };
  for (const [failure, fails] of CHECKS) if (fails(s, question)) return { ok: false, failure, status };
  return { ok: true, status, license };
}

const MESSAGES: Record<Failure, [AppError['code'], string]> = {
  not_found: ['invalid_license', 'License not found.'],
  product_mismatch: ['invalid_license', 'The license does not belong to this product.'],
  device_not_activated: ['invalid_license', 'The device is not activated on this license.'],
  revoked: ['license_revoked', 'License is revoked.'],
  expired: ['license_expired', 'License is expired.'],
  max_devices_reached: ['max_devices_reached', 'The license has no free device slot; remove a device first.'],
};

export function failureError(failure: Failure): AppError {
  const [code, message] = MESSAGES[failure];
  return new AppError(code, message);
}

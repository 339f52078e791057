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

export interface Subject {
  license: LicenseRecord | undefined;
  fallbackEnabled: boolean;
  /** Whether the asking device is active on the license, when a device is part of the question. */
  deviceActive?: boolean;
  /** Devices holding a slot: only activation needs (and reads) them. */
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

export const CHECKS: readonly Check[] = [
  ['product_mismatch', (s, q) => q.productIds !== undefined && !q.productIds.includes(s.license.productId)],
  ['revoked', (s) => s.status === 'revoked'],
  ['expired', (s) => s.status === 'expired'],
  ['device_not_activated', (s, q) => q.requireActiveDevice === true && s.deviceActive !== true],
  ['max_devices_reached', (s, q) => q.needsSlot === true && s.deviceActive !== true && s.activeDeviceCount! >= s.license.maxDevices],
];

/** `status` is the license's status whenever the license exists, whichever check failed. */
export type Verdict =
  | { ok: true; status: LicenseStatus; license: LicenseRecord }
  | { ok: false; failure: Failure; status: LicenseStatus | null };

export function evaluate(subject: Subject, question: Question): Verdict {
  const license = subject.license;
  if (!license) return { ok: false, failure: 'not_found', status: null };
  if (question.needsSlot && subject.activeDeviceCount === undefined) throw new Error('The slot check needs the active device count');
  const status = licenseStatus(license, subject.fallbackEnabled, question.now);
  // Built field by field, not spread: one object shape whichever fields the caller passed.
  const s: Checked = { license, fallbackEnabled: subject.fallbackEnabled, deviceActive: subject.deviceActive, activeDeviceCount: subject.activeDeviceCount, status };
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

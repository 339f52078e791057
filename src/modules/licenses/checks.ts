import { AppError } from '../../core/errors.ts';
import { type LicenseStatus, licenseStatus } from '../../core/license-status.ts';
import type { LicenseRecord } from './types.ts';

/**
 * License validation as one ordered list of checks (the first failure decides). Activation,
 * public validation and token refresh run the same list; each names the checks it needs.
 */
export type Failure = 'not_found' | 'product_mismatch' | 'revoked' | 'expired' | 'device_not_activated' | 'max_devices_reached';

export interface Subject {
  license: LicenseRecord | undefined;
  fallbackEnabled: boolean;
  /** The asking device's state on the license, when a device is part of the question. */
  deviceActive: boolean;
  activeDeviceCount: number;
}

export interface Question {
  productIds?: readonly string[];
  /** Validation and tokens need the device to be active already. */
  requireActiveDevice?: boolean;
  /** Activation needs a free slot unless the device holds one. */
  needsSlot?: boolean;
  now: number;
}

type Check = [Failure, (s: Subject & { license: LicenseRecord; status: LicenseStatus }, q: Question) => boolean];

const CHECKS: readonly Check[] = [
  ['product_mismatch', (s, q) => q.productIds !== undefined && !q.productIds.includes(s.license.productId)],
  ['revoked', (s) => s.status === 'revoked'],
  ['expired', (s) => s.status === 'expired'],
  ['device_not_activated', (s, q) => q.requireActiveDevice === true && !s.deviceActive],
  ['max_devices_reached', (s, q) => q.needsSlot === true && !s.deviceActive && s.activeDeviceCount >= s.license.maxDevices],
];

export type Verdict = { ok: true; status: LicenseStatus; license: LicenseRecord } | { ok: false; failure: Failure };

export function evaluate(subject: Subject, question: Question): Verdict {
  const license = subject.license;
  if (!license) return { ok: false, failure: 'not_found' };
  const status = licenseStatus(license, subject.fallbackEnabled, question.now);
  const s = { ...subject, license, status };
  for (const [failure, fails] of CHECKS) if (fails(s, question)) return { ok: false, failure };
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

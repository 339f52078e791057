/**
 * The status rule of a license, in one place (decisions.md): revoked wins; a timed license past
 * its expiry is expired, or fallbacked when its product allows fallback; otherwise active.
 */
export type LicenseStatus = 'active' | 'expired' | 'revoked' | 'fallbacked';

export interface StatusInput {
  revoked: boolean;
  type: 'perpetual' | 'timed';
  expiresAt: number | null;
}

export function licenseStatus(license: StatusInput, fallbackEnabled: boolean, now: number): LicenseStatus {
  if (license.revoked) return 'revoked';
  if (license.type === 'timed' && license.expiresAt !== null && license.expiresAt <= now) {
    return fallbackEnabled ? 'fallbacked' : 'expired';
  }
  return 'active';
}

/** A fallbacked license still works: clients show limited access. */
export const statusIsValid = (status: LicenseStatus): boolean => status === 'active' || status === 'fallbacked';

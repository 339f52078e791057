import { decodeEntitlements } from '../../core/entitlements.ts';
import { bool, type LicenseRow } from '../../storage/schema.ts';
import type { LicenseRecord } from './types.ts';

/** A license row as the domain's record, without its metadata (the public hot path and lists skip decoding it). */
export const toRecord = (r: Omit<LicenseRow, 'email_normalized' | 'metadata'>): LicenseRecord => ({
  key: r.key,
  accountId: r.account_id,
  productId: r.product_id,
  type: r.type,
  expiresAt: r.expires_at,
  revoked: bool(r.revoked),
  email: r.email,
  maxDevices: r.max_devices,
  createdAt: r.created_at,
  entitlements: decodeEntitlements(r.entitlements),
  trial: bool(r.trial),
});

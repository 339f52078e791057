import { AppError } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { LicenseService } from './service.ts';

/**
 * Bulk actions on a selection of licenses (the dashboard's list; docs/decisions/bulk-actions.md).
 * Each license goes through the same service method as its single action, in its own unit: its
 * audit entry, event and webhooks are exactly a single action's, and one failure undoes nothing
 * else. What cannot apply to a license is skipped and counted with its reason.
 */

export const BULK_ACTIONS = ['revoke', 'unrevoke', 'extend', 'email', 'delete'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/**
 * At most this many licenses per bulk action: each is a unit of its own (a lock, the change, its
 * audit row, event and webhook deliveries: a few milliseconds each), so 1,000 stays within a few
 * seconds of one request; more is a job for the API or the CLI.
 */
export const BULK_MAX = 1000;

/** Extend by 1 to 3,650 days (ten years) at a time. */
export const EXTEND_DAYS_MAX = 3650;

export type SkipReason = 'not_found' | 'already_revoked' | 'not_revoked' | 'perpetual' | 'no_email';

export interface BulkOutcome {
  changed: number;
  skipped: Partial<Record<SkipReason, number>>;
  /** Licenses whose change failed for another reason (nothing of theirs changed). */
  failed: number;
}

/** One license's change: what happened to it. */
type Step = (licenses: LicenseService, principal: Principal, key: string, days: number) => Promise<'changed' | SkipReason>;

const STEPS: Record<BulkAction, Step> = {
  async revoke(licenses, principal, key) {
    return (await licenses.setRevoked(principal, key, true)) ? 'changed' : 'already_revoked';
  },
  async unrevoke(licenses, principal, key) {
    return (await licenses.setRevoked(principal, key, false)) ? 'changed' : 'not_revoked';
  },
  async extend(licenses, principal, key, days) {
    return (await licenses.extendExpiry(principal, key, days)) === 'perpetual' ? 'perpetual' : 'changed';
  },
  async email(licenses, principal, key) {
    if (!(await licenses.get(principal, key)).email) return 'no_email';
    await licenses.sendPurchaseEmail(principal, key);
    return 'changed';
  },
  async delete(licenses, principal, key) {
    await licenses.delete(principal, key);
    return 'changed';
  },
};

/**
 * Applies `action` to each key, one unit per license. Another account's key (or one deleted
 * meanwhile) answers like an unknown one: skipped as not found, never touched.
 */
export async function applyBulk(licenses: LicenseService, principal: Principal, action: BulkAction, keys: readonly string[], days = 0): Promise<BulkOutcome> {
  if (keys.length > BULK_MAX) throw new AppError('invalid_request', `At most ${BULK_MAX} licenses per bulk action.`);
  const outcome: BulkOutcome = { changed: 0, skipped: {}, failed: 0 };
  for (const key of new Set(keys)) {
    let result: 'changed' | SkipReason;
    try {
      result = await STEPS[action](licenses, principal, key, days);
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') result = 'not_found';
      else if (error instanceof AppError && error.statusCode < 500) {
        outcome.failed += 1;
        continue;
      } else throw error;
    }
    if (result === 'changed') outcome.changed += 1;
    else outcome.skipped[result] = (outcome.skipped[result] ?? 0) + 1;
  }
  return outcome;
}

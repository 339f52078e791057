import type { Subscription, SubscriptionItem } from '../payments/provider.ts';

const DAY = 86_400_000;

/** A subscription that will never bill again: its licenses end when it ended. */
export const hasEnded = (sub: { status: string }): boolean => sub.status === 'canceled' || sub.status === 'incomplete_expired';

/**
 * THE rule for a linked license's `expiresAt` (decisions.md, "Subscriptions"), from the
 * subscription as the provider reports it now and the billing period of the license's item:
 * - active or trialing: the period's end (the trial's end while trialing) plus the grace, or exactly
 *   that end when the subscription is set to cancel then (nothing more will be paid);
 * - past_due, unpaid (and incomplete, paused: nothing paid beyond it either): the current period's
 *   START plus the grace. The provider moves the period on when it bills the renewal, before the
 *   payment, so the customer has paid up to the period's start;
 * - ended: when it ended.
 * Null when there is no period to go by (an item-less subscription that has not ended): the license
 * keeps its expiry.
 */
export function subscriptionExpiresAt(sub: Subscription, item: SubscriptionItem | undefined, graceDays: number): number | null {
  const period = item ?? sub.items[0];
  if (hasEnded(sub)) return sub.endedAt ?? period?.currentPeriodEnd ?? null;
  if (!period) return null;
  const grace = graceDays * DAY;
  switch (sub.status) {
    case 'active':
    case 'trialing': {
      const end = sub.status === 'trialing' && sub.trialEnd !== null ? sub.trialEnd : period.currentPeriodEnd;
      return sub.cancelAtPeriodEnd ? end : end + grace;
    }
    default:
      return period.currentPeriodStart + grace;
  }
}

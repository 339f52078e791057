import { Type } from 'typebox';
import type { SubscriptionSnapshot } from '../../core/events.ts';
import { toIsoOrNull } from '../../core/time.ts';
import { Nullable, Timestamp } from '../../http/schema-helpers.ts';

export const SubscriptionBody = Nullable(
  Type.Object(
    {
      provider: Type.String({ description: 'stripe' }),
      id: Type.String({ description: "The provider's subscription id (sub_...)." }),
      status: Type.String({ description: "The provider's status: active, trialing, past_due, unpaid, canceled, incomplete_expired, ..." }),
      currentPeriodEnd: Nullable(Timestamp),
      cancelAtPeriodEnd: Type.Boolean(),
    },
    { description: 'The subscription the license follows; null when it follows none.' },
  ),
);

export const subscriptionView = (s: SubscriptionSnapshot) => ({
  provider: s.provider,
  id: s.id,
  status: s.status,
  currentPeriodEnd: toIsoOrNull(s.currentPeriodEnd),
  cancelAtPeriodEnd: s.cancelAtPeriodEnd,
});

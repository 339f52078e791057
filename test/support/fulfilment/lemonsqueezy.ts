import { connectionIdOf, connectThrough, nowSeconds, type Doubles, type ProviderDriver, type Shop, type SubState } from './driver.ts';
import type { LsSubscription } from '../lemonsqueezy-double.ts';

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Lemon Squeezy: orders of variants; a subscription's first order is fulfilled by its
 * subscription_created. It reports no period start: while past_due, `renews_at` is the renewal that
 * failed, which is where the unpaid period starts.
 */
export function lemonSqueezyDriver(d: Doubles): ProviderDriver {
  const double = d.lemonsqueezy;
  const webhook = (shop: Shop) => double.webhooks.get(shop.endpointId)!;
  const sign = (via: Shop, name: string, data: unknown) => {
    const { body, headers } = double.event(via.secret, name, data);
    return { payload: body, headers };
  };
  return {
    name: 'lemonsqueezy',
    async connect(t) {
      const account = double.account();
      const { endpointId } = await connectThrough(d.ctx, t, 'lemonsqueezy', account);
      const w = double.webhooks.get(endpointId)!;
      return { t, key: account.apiKey, scope: account.storeId, endpointId, connectionId: connectionIdOf(w.url), secret: w.secret };
    },
    price: (shop, billing) => double.variant(shop.scope, { subscription: billing === 'subscription' }),
    order(shop, o) {
      const order = double.order(shop.scope, { variantId: o.priceId, email: o.email, quantity: o.quantity });
      return {
        id: order.id,
        paid: (via = shop) => sign(via, 'order_created', double.orderResource(order)),
        refunded: (via = shop) => sign(via, 'order_refunded', double.orderResource({ ...order, status: 'refunded', refunded: true })),
        // Lemon Squeezy marks a partly refunded order `refunded` with `refunded: false`.
        partiallyRefunded: () => sign(shop, 'order_refunded', double.orderResource({ ...order, status: 'refunded', refunded: false })),
      };
    },
    subscription(shop, o) {
      let state: SubState = { status: 'active', cancelAtPeriodEnd: false, periodStart: nowSeconds(), periodEnd: nowSeconds() + 30 * 86_400_000, endedAt: null, priceId: o.priceId, quantity: o.quantity };
      const { sub, order } = double.subscription(shop.scope, { variantId: o.priceId, email: o.email, quantity: o.quantity, renewsAt: state.periodEnd });
      return {
        id: sub.id,
        state: () => state,
        set(change) {
          state = { ...state, ...change };
          hold(sub, state);
        },
        started: () => [sign(shop, 'order_created', double.orderResource(order)), sign(shop, 'subscription_created', double.subscriptionResource(sub))],
        changed: (via = shop) => sign(via, state.status === 'ended' ? 'subscription_expired' : state.cancelAtPeriodEnd ? 'subscription_cancelled' : 'subscription_updated', double.subscriptionResource(sub)),
        renewed: () => sign(shop, 'subscription_payment_success', double.invoiceResource(sub)),
        paymentRefunded: () => [
          sign(shop, 'order_refunded', double.orderResource({ ...order, status: 'refunded', refunded: true })),
          sign(shop, 'subscription_payment_refunded', double.invoiceResource(sub)),
        ],
      };
    },
    endpointEvents: (shop) => webhook(shop).events,
    setEndpointEvents: (shop, events) => void (webhook(shop).events = events),
    dropEndpoint: (shop) => void double.webhooks.delete(shop.endpointId),
    failNextCall: (status) => double.fail(status),
  };
}

/** The neutral state as Lemon Squeezy holds it (a cancelled subscription runs to its ends_at, then expires). */
function hold(sub: LsSubscription, s: SubState): void {
  sub.variantId = s.priceId;
  sub.quantity = s.quantity;
  sub.renewsAt = iso(s.status === 'past_due' ? s.periodStart : s.periodEnd);
  sub.cancelled = s.status === 'ended' || s.cancelAtPeriodEnd;
  sub.status = s.status === 'ended' ? 'expired' : s.status === 'past_due' ? 'past_due' : s.cancelAtPeriodEnd ? 'cancelled' : 'active';
  sub.endsAt = s.status === 'ended' ? iso(s.endedAt!) : s.cancelAtPeriodEnd ? iso(s.periodEnd) : null;
}

import { connectionIdOf, connectThrough, nowSeconds, type Doubles, type ProviderDriver, type Shop, type SubState } from './driver.ts';
import { type PolarDoubleOrder, type PolarDoubleSubscription, polarObjects, polarSignedEvent } from '../polar-double.ts';

/**
 * Polar: orders of products (seats where Stripe has a quantity); a subscription's first order is
 * billing_reason subscription_create, each renewal a subscription_cycle order; Standard Webhooks signatures.
 */
export function polarDriver(d: Doubles): ProviderDriver {
  const double = d.polar;
  const endpoint = (shop: Shop) => double.endpoints.get(shop.endpointId)!;
  const sign = (via: Shop, type: string, data: unknown) => polarSignedEvent(via.secret, type, data);
  const orderData = (shop: Shop, order: PolarDoubleOrder, sub?: PolarDoubleSubscription) => polarObjects.order(order, shop.scope, undefined, sub);
  return {
    name: 'polar',
    async connect(t) {
      const org = double.organization();
      const { endpointId } = await connectThrough(d.ctx, t, 'polar', { accessToken: org.token, organizationId: org.organizationId, sandbox: true });
      const e = double.endpoints.get(endpointId)!;
      return { t, key: org.token, scope: org.organizationId, endpointId, connectionId: connectionIdOf(e.url), secret: e.secret };
    },
    price: (shop, billing) => double.addProduct(shop.key, { recurring: billing === 'subscription' }),
    order(shop, o) {
      const order = double.addOrder(shop.key, { productId: o.priceId, email: o.email, seats: o.quantity });
      return {
        id: order.id,
        paid: (via = shop) => sign(via, 'order.paid', orderData(shop, order)),
        refunded: (via = shop) => sign(via, 'order.refunded', orderData(shop, { ...order, status: 'refunded' })),
        partiallyRefunded: () => sign(shop, 'order.refunded', orderData(shop, { ...order, status: 'partially_refunded' })),
      };
    },
    subscription(shop, o) {
      const start = nowSeconds();
      const sub = double.addSubscription(shop.key, { productId: o.priceId, seats: o.quantity, currentPeriodStart: start, currentPeriodEnd: start + 30 * 86_400_000 });
      const first = double.addOrder(shop.key, { productId: o.priceId, subscriptionId: sub.id, billingReason: 'subscription_create', email: o.email });
      const started = sign(shop, 'order.paid', orderData(shop, first, sub));
      return {
        id: sub.id,
        state: () => stateOf(sub),
        set: (change) => hold(sub, { ...stateOf(sub), ...change }),
        started: () => [started],
        changed: (via = shop) => sign(via, sub.endedAt !== null ? 'subscription.revoked' : sub.cancelAtPeriodEnd ? 'subscription.canceled' : 'subscription.updated', polarObjects.subscription(sub, shop.scope)),
        renewed: () => {
          const cycle = double.addOrder(shop.key, { productId: sub.productId, subscriptionId: sub.id, billingReason: 'subscription_cycle', email: first.email });
          return sign(shop, 'order.paid', orderData(shop, cycle, sub));
        },
        paymentRefunded: () => {
          const cycle = double.addOrder(shop.key, { productId: sub.productId, subscriptionId: sub.id, billingReason: 'subscription_cycle', email: first.email, status: 'refunded' });
          return [first, cycle].map((order) => sign(shop, 'order.refunded', orderData(shop, { ...order, status: 'refunded' }, sub)));
        },
      };
    },
    endpointEvents: (shop) => endpoint(shop).events,
    setEndpointEvents: (shop, events) => void (endpoint(shop).events = events),
    dropEndpoint: (shop) => void double.endpoints.delete(shop.endpointId),
    failNextCall: (status) => double.fail(status, 1),
  };
}

function stateOf(s: PolarDoubleSubscription): SubState {
  return {
    status: s.status === 'canceled' ? 'ended' : (s.status as 'active' | 'past_due'),
    cancelAtPeriodEnd: s.cancelAtPeriodEnd,
    periodStart: s.currentPeriodStart,
    periodEnd: s.currentPeriodEnd,
    endedAt: s.endedAt,
    priceId: s.productId,
    quantity: s.seats ?? 1,
  };
}

function hold(sub: PolarDoubleSubscription, s: SubState): void {
  Object.assign(sub, {
    status: s.status === 'ended' ? 'canceled' : s.status,
    cancelAtPeriodEnd: s.cancelAtPeriodEnd,
    currentPeriodStart: s.periodStart,
    currentPeriodEnd: s.periodEnd,
    endedAt: s.endedAt,
    productId: s.priceId,
    seats: s.quantity,
  });
}

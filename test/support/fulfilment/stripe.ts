import { randomBytes } from 'node:crypto';
import { connectionIdOf, connectThrough, type Delivery, type Doubles, type ProviderDriver, type Shop, type SubState } from './driver.ts';
import { type DoubleSubscription, signedEvent, stripeObjects } from '../stripe-double.ts';

const seconds = (ms: number): number => Math.floor(ms / 1000);
const sign = (secret: string, type: string, object: unknown): Delivery => {
  const { payload, header } = signedEvent(secret, type, object);
  return { payload, headers: { 'stripe-signature': header } };
};

/** Stripe: checkout sessions and PaymentIntents, subscriptions with items, events signed as the package signs them. */
export function stripeDriver(d: Doubles): ProviderDriver {
  const double = d.stripe;
  const endpoint = (shop: Shop) => double.endpoints.get(shop.endpointId)!;
  return {
    name: 'stripe',
    async connect(t) {
      const key = double.account();
      const { endpointId } = await connectThrough(d.ctx, t, 'stripe', { restrictedKey: key });
      const e = double.endpoints.get(endpointId)!;
      return { t, key, scope: '', endpointId, connectionId: connectionIdOf(e.url), secret: e.secret };
    },
    price: (shop) => double.price(shop.key),
    order(shop, o) {
      const session = double.session(shop.key, [{ priceId: o.priceId, quantity: o.quantity }]);
      const paymentIntent = `pi_${randomBytes(8).toString('hex')}`;
      return {
        id: session,
        paid: (via = shop) => sign(via.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: session, email: o.email, paymentIntent })),
        refunded: (via = shop) => sign(via.secret, 'charge.refunded', stripeObjects.charge({ paymentIntent, refunded: true })),
        partiallyRefunded: () => sign(shop.secret, 'charge.refunded', stripeObjects.charge({ paymentIntent, refunded: false })),
      };
    },
    subscription(shop, o) {
      const sub = double.subscription(shop.key, { items: [{ priceId: o.priceId, quantity: o.quantity }], start: seconds(Date.now()) });
      const checkout = sign(shop.secret, 'checkout.session.completed', stripeObjects.subscriptionCheckout({ id: `cs_test_${randomBytes(8).toString('hex')}`, subscription: sub.id, email: o.email }));
      const state = (): SubState => stateOf(sub);
      return {
        id: sub.id,
        state,
        set: (change) => double.updateSubscription(shop.key, sub.id, (s) => hold(s, { ...state(), ...change })),
        started: () => [checkout],
        changed: (via = shop) => sign(via.secret, sub.ended_at === null ? 'customer.subscription.updated' : 'customer.subscription.deleted', double.subscriptionObject(shop.key, sub.id)),
        renewed: () => sign(shop.secret, 'invoice.paid', stripeObjects.subscriptionInvoice({ subscription: sub.id, status: 'paid' })),
        // The subscription's first payment is its invoice's PaymentIntent, which the checkout does not name.
        paymentRefunded: () => [sign(shop.secret, 'charge.refunded', stripeObjects.charge({ paymentIntent: `pi_${randomBytes(8).toString('hex')}`, refunded: true }))],
      };
    },
    endpointEvents: (shop) => endpoint(shop).enabled_events,
    setEndpointEvents: (shop, events) => void (endpoint(shop).enabled_events = events),
    dropEndpoint: (shop) => void double.endpoints.delete(shop.endpointId),
    // The package retries a failed call once.
    failNextCall: (status) => double.fail(status, 2),
  };
}

function stateOf(s: DoubleSubscription): SubState {
  const item = s.items[0]!;
  return {
    status: s.status === 'canceled' ? 'ended' : (s.status as 'active' | 'past_due'),
    cancelAtPeriodEnd: s.cancel_at_period_end,
    periodStart: item.current_period_start * 1000,
    periodEnd: item.current_period_end * 1000,
    endedAt: s.ended_at === null ? null : s.ended_at * 1000,
    priceId: item.priceId,
    quantity: item.quantity,
  };
}

function hold(s: DoubleSubscription, state: SubState): void {
  const item = s.items[0]!;
  s.status = state.status === 'ended' ? 'canceled' : state.status;
  s.cancel_at_period_end = state.cancelAtPeriodEnd;
  s.ended_at = state.endedAt === null ? null : seconds(state.endedAt);
  Object.assign(item, { priceId: state.priceId, quantity: state.quantity, current_period_start: seconds(state.periodStart), current_period_end: seconds(state.periodEnd) });
}

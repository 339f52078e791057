import type { DomainEvent } from '../../src/core/events.ts';
import { eventAccountId } from '../../src/core/events.ts';
import { call, createProduct, createTenant, type Tenant } from './app.ts';
import { connectStripe, type Connected, licensesOf, mapPrice, type PaymentsContext, send } from './payments.ts';
import { type DoubleSubscription, stripeObjects } from './stripe-double.ts';

export const DAY = 86_400_000;

export interface Subscribed {
  t: Tenant;
  c: Connected;
  productId: string;
  price: string;
  sub: DoubleSubscription;
  email: string;
  /** Domain events of this tenant, in order. */
  events: DomainEvent[];
}

let n = 0;

/** A tenant with a subscription mapping, a subscription at the double, and its checkout delivered. */
export async function subscribe(p: PaymentsContext, o: { graceDays?: number; maxDevices?: number; quantity?: number; status?: string; trialEnd?: number | null; checkout?: boolean; tenant?: Tenant } = {}): Promise<Subscribed> {
  const t = o.tenant ?? (await createTenant(p.ctx));
  const events: DomainEvent[] = [];
  p.ctx.services.events.subscribe((e) => void (eventAccountId(e) === t.accountId && events.push(e)));
  const c = await connectStripe(p, t);
  const product = await createProduct(p.ctx, t, { name: 'Cloud Studio' });
  const price = p.double.price(c.key);
  await mapPrice(p, t, product.id, { priceId: price, billing: 'subscription', licenseType: 'timed', maxDevices: o.maxDevices ?? 2, ...(o.graceDays !== undefined && { graceDays: o.graceDays }) });
  const sub = p.double.subscription(c.key, { items: [{ priceId: price, quantity: o.quantity ?? 1 }], status: o.status, trialEnd: o.trialEnd });
  const email = `subscriber${++n}-${Date.now()}@example.com`;
  if (o.checkout !== false) {
    const res = await send(p.ctx, c, 'checkout.session.completed', stripeObjects.subscriptionCheckout({ id: `cs_test_sub${n}${Date.now()}`, subscription: sub.id, email }));
    if (res.status !== 200) throw new Error(`checkout: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return { t, c, productId: product.id, price, sub, email, events };
}

/** Delivers a subscription event (its object as the double shows the subscription now). */
export function subscriptionEvent(p: PaymentsContext, s: Subscribed, type = 'customer.subscription.updated') {
  return send(p.ctx, s.c, type, p.double.subscriptionObject(s.c.key, s.sub.id));
}

export async function licenseOf(p: PaymentsContext, s: Subscribed) {
  const rows = await licensesOf(p.ctx.store, s.t.accountId);
  if (rows.length !== 1) throw new Error(`expected one license, found ${rows.length}`);
  const res = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...s.t.auth, 'license-key': rows[0]!.key } });
  return { row: rows[0]!, view: res.body };
}

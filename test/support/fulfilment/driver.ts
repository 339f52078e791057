import { afterAll, beforeAll } from 'vitest';
import { call, type Tenant, type TestContext, useTestApp } from '../app.ts';
import { LemonSqueezyDouble } from '../lemonsqueezy-double.ts';
import { PolarDouble } from '../polar-double.ts';
import type { StoreKind } from '../stores.ts';
import { StripeDouble } from '../stripe-double.ts';

/**
 * What the shared fulfilment suite (test/payments/fulfilment.*.shared.test.ts) asks of a provider:
 * connect, make prices, make the provider's double hold an order or a subscription in a given
 * state, and sign the events the provider would send about it. The rules are then asserted once,
 * in the suite, for every provider.
 */

/** A signed notification, as the provider would POST it. */
export interface Delivery {
  headers: Record<string, string>;
  payload: string;
}

/** A tenant connected to a fresh account at the provider's double. */
export interface Shop {
  t: Tenant;
  connectionId: string;
  /** The webhook's signing secret. */
  secret: string;
  /** The credential at the double (Stripe key, Lemon Squeezy API key, Polar token). */
  key: string;
  /** The store (Lemon Squeezy) or organization (Polar) of the connection; '' for Stripe. */
  scope: string;
  /** The endpoint at the provider (its events are what refresh-endpoint sets). */
  endpointId: string;
}

/** An order held by the double, and the events about it (signed with `via`'s secret: another shop's, in isolation tests). */
export interface Order {
  /** What the purchase records as its sessionId. */
  id: string;
  paid(via?: Shop): Delivery;
  refunded(via?: Shop): Delivery;
  partiallyRefunded(): Delivery;
}

/** A subscription's state in neutral terms (epoch ms, whole seconds): what the double is made to hold. */
export interface SubState {
  status: 'active' | 'past_due' | 'ended';
  cancelAtPeriodEnd: boolean;
  periodStart: number;
  periodEnd: number;
  endedAt: number | null;
  priceId: string;
  quantity: number;
}

export interface Sub {
  id: string;
  state(): SubState;
  /** Makes the double hold the state with `change` applied, as the provider would report it. */
  set(change: Partial<SubState>): void;
  /** The events that start it (the checkout; the first order and subscription_created): they create the license. */
  started(): Delivery[];
  /** The event the provider sends about the state it holds now. */
  changed(via?: Shop): Delivery;
  /** A renewal payment went through (after `set` moved the period on). */
  renewed(): Delivery;
  /** The events full refunds of the subscription's payments send (its first; a renewal's too where the provider names it). */
  paymentRefunded(): Delivery[];
}

export interface ProviderDriver {
  readonly name: 'stripe' | 'lemonsqueezy' | 'polar';
  connect(t: Tenant): Promise<Shop>;
  /** A new price at the double (Stripe price, Lemon Squeezy variant, Polar product), of the shop's account. */
  price(shop: Shop, billing?: 'one_time' | 'subscription'): string;
  order(shop: Shop, o: { priceId: string; quantity: number; email: string }): Order;
  subscription(shop: Shop, o: { priceId: string; quantity: number; email: string }): Sub;
  /** The events the endpoint at the double listens to now. */
  endpointEvents(shop: Shop): string[];
  setEndpointEvents(shop: Shop, events: string[]): void;
  /** Deletes the endpoint at the double (as an operator would at the provider). */
  dropEndpoint(shop: Shop): void;
  /** Makes the double answer its next call with `status`. */
  failNextCall(status: number): void;
}

export interface Doubles {
  ctx: TestContext;
  stripe: StripeDouble;
  lemonsqueezy: LemonSqueezyDouble;
  polar: PolarDouble;
}

export const DAY = 86_400_000;
/** Now, whole seconds (Stripe's times are seconds). */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000) * 1000;

/** One test app whose three provider packages talk to their doubles on loopback. */
export function useProviderDoubles(kind: StoreKind): Doubles {
  const doubles = { stripe: new StripeDouble(), lemonsqueezy: new LemonSqueezyDouble(), polar: new PolarDouble() };
  const env: Record<string, string> = {};
  // Registered before useTestApp's own beforeAll, so the app is built with the doubles' addresses.
  beforeAll(async () => {
    await Promise.all([doubles.stripe.start(), doubles.lemonsqueezy.start(), doubles.polar.start()]);
    Object.assign(env, { STRIPE_API_URL: doubles.stripe.url, LEMONSQUEEZY_API_URL: doubles.lemonsqueezy.url, POLAR_API_URL: doubles.polar.url });
  });
  const ctx = useTestApp(kind, { env });
  afterAll(() => Promise.all([doubles.stripe.stop(), doubles.lemonsqueezy.stop(), doubles.polar.stop()]));
  return { ctx, ...doubles };
}

/** PUTs the provider's connection and finds its endpoint at the double by the id the answer names. */
export async function connectThrough(ctx: TestContext, t: Tenant, provider: string, json: Record<string, unknown>): Promise<{ endpointId: string }> {
  const res = await call(ctx, { method: 'PUT', url: `/api/v1/payments/${provider}`, headers: t.auth, json });
  if (res.status !== 200) throw new Error(`connect ${provider}: ${res.status} ${JSON.stringify(res.body)}`);
  return { endpointId: res.body.webhookEndpointId as string };
}

export const connectionIdOf = (webhookUrl: string): string => webhookUrl.split('/').pop()!;

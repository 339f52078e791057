/**
 * The seam between the fulfilment rules (service.ts, written once) and each payment provider.
 * An adapter speaks its provider's API and turns what the provider sends into the neutral facts
 * below; Stripe is one (stripe.ts), Lemon Squeezy or Polar would be others.
 */

/** What connecting creates at the provider: the notification endpoint and its signing secret. */
export interface ProviderEndpoint {
  endpointId: string;
  signingSecret: string;
  livemode: boolean;
}

/** A paid purchase: what the provider's checkout tells, before its line items are fetched. */
export interface PaidPurchase {
  kind: 'paid';
  sessionId: string;
  /** What a later refund or dispute names (Stripe: the PaymentIntent id). */
  paymentId: string | null;
  email: string | null;
  amountTotal: number | null;
  currency: string | null;
  invoiceId: string | null;
  /** A checkout in subscription mode: the subscription it started (its items are the line items). */
  subscriptionId: string | null;
  /** A renewal or upgrade: the license the checkout is for (from its metadata), which it changes instead of creating one. */
  licenseKey: string | null;
}

/** A payment taken back: every license of its purchase is revoked (a subscription's licenses follow the subscription instead). */
export interface ReversedPayment {
  kind: 'reversed';
  paymentId: string;
  reason: 'refunded' | 'disputed';
}

/**
 * A notification with nothing to do: another event type, or (`malformed`) a correctly signed event of
 * a handled type that lacks what it needs. Both answer 200, so the provider stops sending it; a
 * malformed one is logged as a warning (retrying it would never make it readable).
 */
export interface IgnoredNotification {
  kind: 'ignored';
  type: string;
  malformed?: string;
}

/**
 * Something happened to a subscription (created, updated, deleted, an invoice paid): the service
 * asks the provider for the subscription's current state and applies that, never the event's copy.
 */
export interface SubscriptionChanged {
  kind: 'subscription';
  eventId: string;
  subscriptionId: string;
}

/** A subscription's renewal payment failed: the customer is told; no license changes. */
export interface SubscriptionPaymentFailed {
  kind: 'payment_failed';
  eventId: string;
  subscriptionId: string;
  /** The address the provider billed, when it says. */
  email: string | null;
  /** Where the customer pays the failed invoice at the provider, when there is such a page. */
  payUrl: string | null;
}

/** A notification's request headers, names lower-cased (as Node gives them). */
export type WebhookHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** One header's value (the first, when sent several times). */
export function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * What the notification route of a provider says about itself: its OpenAPI text and the rate-limit
 * bucket of a connection (providers send every account's events from a few addresses, so the bucket
 * is per connection, not per address).
 */
export interface WebhookRouteInfo {
  /** The provider's name as people write it (Stripe). */
  label: string;
  summary: string;
  description: string;
  rateLimitKey(connectionId: string): string;
}

/** A verified notification, in the provider-neutral terms the fulfilment rules use. */
export type Notification = PaidPurchase | ReversedPayment | SubscriptionChanged | SubscriptionPaymentFailed | IgnoredNotification;

export type SubscriptionStatus = 'active' | 'trialing' | 'past_due' | 'unpaid' | 'canceled' | 'incomplete' | 'incomplete_expired' | 'paused';

export interface SubscriptionItem {
  id: string;
  priceId: string | null;
  quantity: number;
  /** The item's current billing period, epoch ms. */
  currentPeriodStart: number;
  currentPeriodEnd: number;
}

/** A subscription as the provider reports it now (times epoch ms). */
export interface Subscription {
  id: string;
  customerId: string | null;
  status: SubscriptionStatus;
  cancelAtPeriodEnd: boolean;
  trialEnd: number | null;
  endedAt: number | null;
  items: SubscriptionItem[];
}

export interface LineItem {
  id: string;
  priceId: string | null;
  quantity: number;
}

export interface Invoice {
  invoicePdf: string;
  hostedInvoiceUrl: string | null;
}

/**
 * One payment provider. Failures are AppErrors: a refused key `invalid_provider_key`, the provider
 * unreachable or failing `provider_unavailable`, a bad signature `invalid_signature`.
 */
export interface PaymentProvider {
  readonly name: string;
  /** Its notification route (POST /api/v1/payments/{name}/webhook/{connectionId}). */
  readonly webhook: WebhookRouteInfo;
  /** Creates the notification endpoint at `url` (checks the key by doing so). */
  connect(apiKey: string, url: string): Promise<ProviderEndpoint>;
  /** Deletes the endpoint; one already gone is not an error. */
  disconnect(apiKey: string, endpointId: string): Promise<void>;
  /**
   * Verifies the signature over the raw body (at time `now`, epoch ms) with whichever of the request's
   * headers the provider signs with, and parses the notification.
   */
  parse(rawBody: Buffer, headers: WebhookHeaders, signingSecret: string, now: number): Notification;
  /**
   * The checkout's line items; null when another event of the provider fulfils this checkout (a
   * Lemon Squeezy subscription's first order: its subscription event makes the license).
   */
  lineItems(apiKey: string, sessionId: string): Promise<LineItem[] | null>;
  /** Whether the price exists at the provider (false when it does not; other failures throw). */
  priceExists(apiKey: string, priceId: string): Promise<boolean>;
  /** The invoice's documents, or null when the provider has no PDF for it (yet). */
  invoice(apiKey: string, invoiceId: string): Promise<Invoice | null>;
  /** Makes the endpoint listen to every event the service handles now (connections made before). */
  refreshEndpoint(apiKey: string, endpointId: string): Promise<void>;
  /** The subscription's current state, or null when the provider has no such subscription. */
  subscription(apiKey: string, subscriptionId: string): Promise<Subscription | null>;
  /** A hosted checkout page for one price (a renewal or upgrade), carrying `metadata` to its completion event. */
  checkoutUrl(apiKey: string, checkout: { priceId: string; email: string; metadata: Record<string, string>; successUrl: string; cancelUrl: string }): Promise<string>;
  /** A short-lived page where the customer manages their subscriptions and payment methods. */
  billingPortalUrl(apiKey: string, customerId: string, returnUrl: string): Promise<string>;
}

import Stripe from 'stripe';
import { AppError } from '../../core/errors.ts';
import { headerValue, type Invoice, type LineItem, type Notification, type PaymentProvider, type ProviderEndpoint, type Subscription, type SubscriptionStatus, type WebhookHeaders } from './provider.ts';

/** The events the endpoint subscribes to (decisions.md); everything else Stripe might send is ignored. */
export const STRIPE_EVENTS = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'charge.refunded',
  'charge.dispute.created',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.paid',
  'invoice.payment_failed',
] as const;

const SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = ['active', 'trialing', 'past_due', 'unpaid', 'canceled', 'incomplete', 'incomplete_expired', 'paused'];
const ms = (seconds: number | null | undefined): number | null => (typeof seconds === 'number' ? seconds * 1000 : null);

/**
 * The subscription an invoice bills: `parent.subscription_details.subscription` since API version
 * 2025-03-31, `subscription` before (an endpoint renders events in its own version).
 */
function invoiceSubscription(invoice: Record<string, unknown>): string | null {
  const parent = invoice.parent;
  if (isRecord(parent) && isRecord(parent.subscription_details)) return idOf(parent.subscription_details.subscription);
  return idOf(invoice.subscription);
}

/**
 * The license a renewal or upgrade checkout is for: `tessera_license_key`, or `keyforge_license_key`
 * on checkouts made before moving here.
 */
function offerLicenseKey(metadata: Record<string, string> | null | undefined): string | null {
  const key = metadata?.tessera_license_key ?? metadata?.keyforge_license_key;
  return typeof key === 'string' && key.trim() !== '' ? key.trim() : null;
}

/** Stripe's own limit on the age of a signed event we accept (seconds). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

const CLIENT_CACHE_MAX = 1000;

export interface StripeOptions {
  /** STRIPE_API_URL: another address for every call (a test double, a proxy). */
  apiUrl?: string;
  /** Per-call timeout; a webhook answered 500 is retried by Stripe anyway. */
  timeoutMs?: number;
}

const idOf = (value: unknown): string | null =>
  typeof value === 'string' ? value : value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string' ? (value as { id: string }).id : null;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const absentOr = (test: (value: unknown) => boolean) => (value: unknown) => value === undefined || value === null || test(value);
const isString = (value: unknown) => typeof value === 'string';
/** An id, or an expanded object with one. */
const optionalId = absentOr((value) => idOf(value) !== null);

/** A field of an event's object, what it must be, and what is said when it is not. */
type FieldRule = readonly [field: string, ok: (value: unknown) => boolean, must: string];

/**
 * What each handled event reads from its object, checked before it is read: a correctly signed
 * event that lacks it (a test sent by hand, an API version that changed a field) is ignored and
 * logged. Failing on it instead would answer 500, and Stripe would retry it for days.
 */
const SESSION_RULES: readonly FieldRule[] = [
  ['id', isString, 'a string'],
  ['payment_status', isString, 'a string'],
  ['customer_details', absentOr((d) => isRecord(d) && absentOr(isString)(d.email)), 'an object whose email is a string'],
  ['customer_email', absentOr(isString), 'a string'],
  ['amount_total', absentOr(Number.isSafeInteger), 'an integer'],
  ['currency', absentOr(isString), 'a string'],
  ['payment_intent', optionalId, 'an id'],
  ['invoice', optionalId, 'an id'],
  ['subscription', optionalId, 'an id'],
  ['metadata', absentOr(isRecord), 'an object'],
];
const INVOICE_RULES: readonly FieldRule[] = [
  ['id', isString, 'a string'],
  ['customer_email', absentOr(isString), 'a string'],
  ['hosted_invoice_url', absentOr(isString), 'a string'],
];
const OBJECT_RULES: Record<(typeof STRIPE_EVENTS)[number], readonly FieldRule[]> = {
  'checkout.session.completed': SESSION_RULES,
  'checkout.session.async_payment_succeeded': SESSION_RULES,
  'charge.refunded': [
    ['refunded', (value) => typeof value === 'boolean', 'true or false'],
    ['payment_intent', optionalId, 'an id'],
  ],
  'charge.dispute.created': [['payment_intent', optionalId, 'an id']],
  'customer.subscription.created': [['id', isString, 'a string']],
  'customer.subscription.updated': [['id', isString, 'a string']],
  'customer.subscription.deleted': [['id', isString, 'a string']],
  'invoice.paid': INVOICE_RULES,
  'invoice.payment_failed': INVOICE_RULES,
};

/** Why an event's object cannot be read, or undefined when it can (or its type is not handled). */
function malformed(type: string, object: Record<string, unknown>): string | undefined {
  const rules = (OBJECT_RULES as Record<string, readonly FieldRule[] | undefined>)[type] ?? [];
  const broken = rules.find(([field, ok]) => !ok(object[field]));
  return broken && `${broken[0]} must be ${broken[2]}`;
}

/** Stripe's answer as the service's error model: a refused key, the provider failing, or a bug. */
function translate(error: unknown): never {
  if (error instanceof Stripe.errors.StripeAuthenticationError || error instanceof Stripe.errors.StripePermissionError) {
    throw new AppError('invalid_provider_key', `Stripe refused the key: ${error.message}`);
  }
  if (
    error instanceof Stripe.errors.StripeConnectionError ||
    error instanceof Stripe.errors.StripeAPIError ||
    error instanceof Stripe.errors.StripeRateLimitError
  ) {
    throw new AppError('provider_unavailable', 'Stripe is unreachable or failed; try again shortly.');
  }
  throw error;
}

/**
 * Starts a call to the `stripe` package without the call-site stack it captures for its error
 * messages (a `new Error().stack` per request): under --enable-source-maps (npm start) that stack
 * is source-mapped on the spot, a cost per purchase event of the same order as the rest of the
 * call. Its errors become the service's own anyway (translate). The capture is synchronous, inside
 * `start`, so the limit is back before anything else runs.
 */
function withoutCallSite<T>(start: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return start();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

const isMissing = (error: unknown): boolean => error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404;

/**
 * Stripe behind the provider seam, through the official `stripe` package for every call and for
 * signature verification. One client per key (cached): each keeps its own keep-alive connections.
 */
export class StripeProvider implements PaymentProvider {
  readonly name = 'stripe';
  private readonly clients = new Map<string, Stripe>();
  private readonly config: Stripe.StripeConfig;

  constructor(options: StripeOptions = {}) {
    this.config = { maxNetworkRetries: 1, timeout: options.timeoutMs ?? 20_000, appInfo: { name: 'Tessera' } };
    if (options.apiUrl) {
      const url = new URL(options.apiUrl);
      const protocol = url.protocol === 'http:' ? 'http' : 'https';
      this.config = { ...this.config, host: url.hostname, port: url.port || (protocol === 'http' ? 80 : 443), protocol };
    }
  }

  private client(apiKey: string): Stripe {
    let client = this.clients.get(apiKey);
    if (!client) {
      if (this.clients.size >= CLIENT_CACHE_MAX) this.clients.delete(this.clients.keys().next().value!);
      client = new Stripe(apiKey, this.config);
      this.clients.set(apiKey, client);
    }
    return client;
  }

  async connect(apiKey: string, url: string): Promise<ProviderEndpoint> {
    try {
      const endpoint = await this.client(apiKey).webhookEndpoints.create({ url, enabled_events: [...STRIPE_EVENTS], description: 'Tessera: licenses for purchases' });
      if (!endpoint.secret) throw new AppError('provider_unavailable', 'Stripe created the webhook endpoint without a signing secret.');
      return { endpointId: endpoint.id, signingSecret: endpoint.secret, livemode: endpoint.livemode };
    } catch (error) {
      // Stripe refusing the endpoint itself (say, a BASE_URL it cannot reach) is the operator's to fix.
      if (error instanceof Stripe.errors.StripeInvalidRequestError) throw new AppError('invalid_request', `Stripe refused the webhook endpoint: ${error.message}`);
      return translate(error);
    }
  }

  async disconnect(apiKey: string, endpointId: string): Promise<void> {
    try {
      await this.client(apiKey).webhookEndpoints.del(endpointId);
    } catch (error) {
      if (isMissing(error)) return;
      translate(error);
    } finally {
      this.clients.delete(apiKey);
    }
  }

  readonly webhook = {
    label: 'Stripe',
    summary: "Stripe's events (registered at Stripe on connect)",
    description:
      'Verified with the Stripe-Signature header (300 s tolerance). 400 invalid_signature when it is missing or wrong; 400 invalid_request for a body that is no event; 404 for an unknown connection; 500 on failure, so Stripe retries. A handled event whose object lacks what it needs is answered 200 and ignored (logged).',
    rateLimitKey: (connectionId: string) => `stripe-webhook:${connectionId}`,
  };

  parse(rawBody: Buffer, headers: WebhookHeaders, signingSecret: string, now: number): Notification {
    const signature = headerValue(headers, 'stripe-signature');
    if (!signature) throw new AppError('invalid_signature', 'The Stripe-Signature header is missing.');
    let event: Stripe.Event;
    try {
      event = Stripe.webhooks.constructEvent(rawBody, signature, signingSecret, SIGNATURE_TOLERANCE_SECONDS, undefined, now);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) throw new AppError('invalid_signature', `The Stripe-Signature does not verify: ${error.message}`);
      throw new AppError('invalid_request', 'The event is not valid JSON.');
    }
    // Signed, but is it an event at all? (The package parses any JSON: `null`, a list, `{}`.)
    const shape: unknown = event;
    if (!isRecord(shape) || typeof shape.type !== 'string' || !isRecord(shape.data) || !isRecord(shape.data.object)) {
      throw new AppError('invalid_request', 'The body is not a Stripe event: an object with a type and data.object.');
    }
    const broken = malformed(event.type, shape.data.object);
    if (broken !== undefined) return { kind: 'ignored', type: `${event.type} (malformed: ${broken})`, malformed: broken };
    switch (event.type) {
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded': {
        const session = event.data.object;
        // A completed session of a delayed method (bank debit) is not paid yet: async_payment_succeeded follows.
        if (session.payment_status === 'unpaid') return { kind: 'ignored', type: `${event.type} (unpaid)` };
        return {
          kind: 'paid',
          sessionId: session.id,
          paymentId: idOf(session.payment_intent),
          email: session.customer_details?.email ?? session.customer_email ?? null,
          amountTotal: session.amount_total ?? null,
          currency: session.currency ?? null,
          invoiceId: idOf(session.invoice),
          subscriptionId: session.mode === 'subscription' ? idOf(session.subscription) : null,
          licenseKey: offerLicenseKey(session.metadata),
        };
      }
      case 'customer.subscription.created':
      case 'customer.subscription.updated':
      case 'customer.subscription.deleted':
        return { kind: 'subscription', eventId: event.id, subscriptionId: event.data.object.id };
      case 'invoice.paid':
      case 'invoice.payment_failed': {
        const invoice = event.data.object;
        const subscriptionId = invoiceSubscription(shape.data.object);
        // A one-time invoice (a checkout's) is the purchase's business, not a subscription's.
        if (!subscriptionId) return { kind: 'ignored', type: `${event.type} (no subscription)` };
        if (event.type === 'invoice.paid') return { kind: 'subscription', eventId: event.id, subscriptionId };
        return { kind: 'payment_failed', eventId: event.id, subscriptionId, email: invoice.customer_email ?? null, payUrl: invoice.hosted_invoice_url ?? null };
      }
      case 'charge.refunded': {
        const charge = event.data.object;
        const paymentId = idOf(charge.payment_intent);
        // Only a full refund takes the licenses back; a partial one is a goodwill gesture.
        if (!charge.refunded || !paymentId) return { kind: 'ignored', type: `${event.type} (partial)` };
        return { kind: 'reversed', paymentId, reason: 'refunded' };
      }
      case 'charge.dispute.created': {
        const paymentId = idOf(event.data.object.payment_intent);
        return paymentId ? { kind: 'reversed', paymentId, reason: 'disputed' } : { kind: 'ignored', type: event.type };
      }
      default:
        return { kind: 'ignored', type: event.type };
    }
  }

  async lineItems(apiKey: string, sessionId: string): Promise<LineItem[]> {
    const items: LineItem[] = [];
    try {
      const client = this.client(apiKey);
      for await (const item of withoutCallSite(() => client.checkout.sessions.listLineItems(sessionId, { limit: 100 }))) {
        items.push({ id: item.id, priceId: item.price?.id ?? null, quantity: item.quantity ?? 1 });
      }
    } catch (error) {
      translate(error);
    }
    return items;
  }

  async priceExists(apiKey: string, priceId: string): Promise<boolean> {
    try {
      await this.client(apiKey).prices.retrieve(priceId);
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      return translate(error);
    }
  }

  async refreshEndpoint(apiKey: string, endpointId: string): Promise<void> {
    try {
      await this.client(apiKey).webhookEndpoints.update(endpointId, { enabled_events: [...STRIPE_EVENTS] });
    } catch (error) {
      if (isMissing(error)) throw new AppError('invalid_request', 'The webhook endpoint is gone at Stripe: connect again to create a new one.');
      translate(error);
    }
  }

  async subscription(apiKey: string, subscriptionId: string): Promise<Subscription | null> {
    let sub: Stripe.Subscription;
    try {
      const client = this.client(apiKey);
      sub = await withoutCallSite(() => client.subscriptions.retrieve(subscriptionId));
    } catch (error) {
      if (isMissing(error)) return null;
      return translate(error);
    }
    const status = (SUBSCRIPTION_STATUSES as readonly string[]).includes(sub.status) ? (sub.status as SubscriptionStatus) : 'incomplete';
    return {
      id: sub.id,
      customerId: idOf(sub.customer),
      status,
      cancelAtPeriodEnd: sub.cancel_at_period_end,
      trialEnd: ms(sub.trial_end),
      endedAt: ms(sub.ended_at),
      // Since API version 2025-03-31 the billing period is the item's (current_period_start/end).
      items: sub.items.data.map((item) => ({
        id: item.id,
        priceId: item.price?.id ?? null,
        quantity: item.quantity ?? 1,
        currentPeriodStart: item.current_period_start * 1000,
        currentPeriodEnd: item.current_period_end * 1000,
      })),
    };
  }

  async checkoutUrl(apiKey: string, c: { priceId: string; email: string; metadata: Record<string, string>; successUrl: string; cancelUrl: string }): Promise<string> {
    try {
      const session = await this.client(apiKey).checkout.sessions.create({
        mode: 'payment',
        line_items: [{ price: c.priceId, quantity: 1 }],
        customer_email: c.email,
        metadata: c.metadata,
        success_url: c.successUrl,
        cancel_url: c.cancelUrl,
      });
      if (!session.url) throw new AppError('provider_unavailable', 'Stripe created the checkout without a page to send the customer to.');
      return session.url;
    } catch (error) {
      return translate(error);
    }
  }

  async billingPortalUrl(apiKey: string, customerId: string, returnUrl: string): Promise<string> {
    try {
      const session = await this.client(apiKey).billingPortal.sessions.create({ customer: customerId, return_url: returnUrl });
      return session.url;
    } catch (error) {
      return translate(error);
    }
  }

  async invoice(apiKey: string, invoiceId: string): Promise<Invoice | null> {
    try {
      const invoice = await this.client(apiKey).invoices.retrieve(invoiceId);
      return invoice.invoice_pdf ? { invoicePdf: invoice.invoice_pdf, hostedInvoiceUrl: invoice.hosted_invoice_url ?? null } : null;
    } catch (error) {
      if (isMissing(error)) return null;
      return translate(error);
    }
  }
}

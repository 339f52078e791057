import * as ls from '@lemonsqueezy/lemonsqueezy.js';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../core/errors.ts';
import { headerValue, type Invoice, type LineItem, type Notification, type PaymentProvider, type ProviderEndpoint, type Subscription, type SubscriptionStatus, type WebhookHeaders } from './provider.ts';

/** The events the webhook subscribes to (decisions.md, "Lemon Squeezy and Polar"). */
export const LEMONSQUEEZY_EVENTS = [
  'order_created',
  'order_refunded',
  'subscription_created',
  'subscription_updated',
  'subscription_cancelled',
  'subscription_resumed',
  'subscription_expired',
  'subscription_paused',
  'subscription_unpaused',
  'subscription_payment_success',
  'subscription_payment_failed',
  'subscription_payment_recovered',
  'subscription_payment_refunded',
] as const;

/** Events that say "this subscription changed": the service then reads its current state. */
const SUBSCRIPTION_EVENTS = new Set(['subscription_updated', 'subscription_cancelled', 'subscription_resumed', 'subscription_expired', 'subscription_paused', 'subscription_unpaused']);
/**
 * Events about a subscription's invoice (their object is a subscription invoice naming the
 * subscription). A refunded one ends nothing by itself: the subscription's state, read again, decides.
 */
const INVOICE_EVENTS = new Set(['subscription_payment_success', 'subscription_payment_recovered', 'subscription_payment_refunded']);

export interface LemonSqueezyOptions {
  /** LEMONSQUEEZY_API_URL: another origin for every call (a test double, a proxy). */
  apiUrl?: string;
  /** Per-call timeout; a webhook answered 500 is retried by Lemon Squeezy anyway. */
  timeoutMs?: number;
}

/**
 * The seam stores one sealed credential per connection: Lemon Squeezy needs the API key and the
 * store (a key reaches every store of its user). `storeId:apiKey` (ids are digits; keys have no colon
 * at the front).
 */
export function lemonSqueezyCredential(apiKey: string, storeId: string): string {
  return `${storeId}:${apiKey}`;
}

function openCredential(credential: string): { storeId: string; apiKey: string } {
  const colon = credential.indexOf(':');
  return { storeId: credential.slice(0, colon), apiKey: credential.slice(colon + 1) };
}

/** What one call through the package answered, with the HTTP status it saw (204 has no JSON body, which the package reports as an error). */
interface Answer<T> {
  data: T | null;
  status: number | null;
  error: Error | null;
}

const LS_API = 'https://api.lemonsqueezy.com';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const idString = (value: unknown): string | null => (typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' && value !== '' ? value : null);
const time = (value: unknown): number | null => {
  if (typeof value !== 'string') return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : t;
};

/** The license a renewal or upgrade checkout is for (its custom data). */
function offerLicenseKey(custom: unknown): string | null {
  const key = isRecord(custom) ? custom.tessera_license_key : undefined;
  return typeof key === 'string' && key.trim() !== '' ? key.trim() : null;
}

/** Lemon Squeezy's subscription statuses in the seam's terms (a `cancelled` one runs to its `ends_at`). */
const STATUSES: Record<string, SubscriptionStatus> = {
  on_trial: 'trialing',
  active: 'active',
  cancelled: 'active',
  paused: 'paused',
  pause: 'paused',
  past_due: 'past_due',
  unpaid: 'unpaid',
  expired: 'canceled',
};

/**
 * Lemon Squeezy behind the provider seam, through the official `@lemonsqueezy/lemonsqueezy.js`.
 *
 * The package keeps the API key in one module-wide setting and calls the global `fetch` against its
 * fixed address. Each call here sets the key, swaps `globalThis.fetch` for one that goes to
 * LEMONSQUEEZY_API_URL with a timeout, and puts both back before anything else runs: the package
 * reads the key and calls `fetch` synchronously inside the call (before its first await), so two
 * tenants' calls in flight at once never see each other's key (test/payments/lemonsqueezy-adapter.test.ts).
 */
export class LemonSqueezyProvider implements PaymentProvider {
  readonly name = 'lemonsqueezy';
  private readonly apiUrl: string;
  private readonly timeoutMs: number;

  constructor(options: LemonSqueezyOptions = {}) {
    this.apiUrl = (options.apiUrl ?? LS_API).replace(/\/$/, '');
    this.timeoutMs = options.timeoutMs ?? 20_000;
  }

  /** Runs one package call with `apiKey`, against this adapter's address; see the class comment. */
  private async call<T>(apiKey: string, start: () => Promise<{ data: T | null; error: Error | null }>): Promise<Answer<T>> {
    const seen: { status: number | null } = { status: null };
    const realFetch = globalThis.fetch;
    const apiUrl = this.apiUrl;
    const timeoutMs = this.timeoutMs;
    const routed: typeof fetch = async (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const response = await realFetch(`${apiUrl}${url.pathname}${url.search}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
      seen.status = response.status;
      return response;
    };
    let pending: Promise<{ data: T | null; error: Error | null }>;
    globalThis.fetch = routed;
    ls.lemonSqueezySetup({ apiKey });
    try {
      pending = start();
    } finally {
      globalThis.fetch = realFetch;
      ls.lemonSqueezySetup({ apiKey: '' });
    }
    const result = await pending;
    return { data: result.data, status: seen.status, error: seen.status === 204 ? null : result.error };
  }

  /** A call's failure as the service's error model (404 left to the caller). */
  private fail(answer: Answer<unknown>, what: string): never {
    const status = answer.status;
    if (status === 401 || status === 403) throw new AppError('invalid_provider_key', `Lemon Squeezy refused the key (${what}).`);
    if (status === null || status >= 500 || status === 429) throw new AppError('provider_unavailable', 'Lemon Squeezy is unreachable or failed; try again shortly.');
    throw new AppError('invalid_request', `Lemon Squeezy refused ${what}: ${describe(answer)}`);
  }

  private async ok<T>(credential: string, what: string, start: () => Promise<{ data: T | null; error: Error | null }>): Promise<T | null> {
    const answer = await this.call(openCredential(credential).apiKey, start);
    if (answer.status === 404) return null;
    if (answer.error || answer.status === null) this.fail(answer, what);
    return answer.data;
  }

  async connect(credential: string, url: string): Promise<ProviderEndpoint> {
    const { storeId } = openCredential(credential);
    // The key and the store, checked first: a store the key cannot see is the operator's to fix.
    const store = await this.ok(credential, 'the store', () => ls.getStore(storeId));
    if (store === null) throw new AppError('invalid_request', `Lemon Squeezy has no store ${storeId} for this key.`);
    const secret = randomBytes(32).toString('hex');
    const created = await this.ok(credential, 'the webhook', () => ls.createWebhook(storeId, { url, events: [...LEMONSQUEEZY_EVENTS], secret }));
    const webhook = created?.data;
    if (!webhook) throw new AppError('provider_unavailable', 'Lemon Squeezy created no webhook.');
    return { endpointId: webhook.id, signingSecret: secret, livemode: !webhook.attributes.test_mode };
  }

  async disconnect(credential: string, endpointId: string): Promise<void> {
    await this.ok(credential, 'deleting the webhook', () => ls.deleteWebhook(endpointId));
  }

  readonly webhook = {
    label: 'Lemon Squeezy',
    summary: "Lemon Squeezy's events (the webhook is created at Lemon Squeezy on connect)",
    description:
      'Verified with the X-Signature header (hex HMAC-SHA256 of the raw body with the secret made on connect). 400 invalid_signature when it is missing or wrong; 400 invalid_request for a body that is no event; 404 for an unknown connection; 500 on failure, so Lemon Squeezy retries.',
    rateLimitKey: (connectionId: string) => `lemonsqueezy-webhook:${connectionId}`,
  };

  parse(rawBody: Buffer, headers: WebhookHeaders, signingSecret: string): Notification {
    const signature = headerValue(headers, 'x-signature') ?? '';
    const expected = createHmac('sha256', signingSecret).update(rawBody).digest();
    const given = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, 'hex') : Buffer.alloc(0);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new AppError('invalid_signature', signature ? 'The X-Signature does not verify.' : 'The X-Signature header is missing.');
    }
    let event: unknown;
    try {
      event = JSON.parse(rawBody.toString('utf8'));
    } catch {
      throw new AppError('invalid_request', 'The event is not valid JSON.');
    }
    if (!isRecord(event) || !isRecord(event.meta) || !isRecord(event.data) || !isRecord(event.data.attributes)) {
      throw new AppError('invalid_request', 'The body is not a Lemon Squeezy event: an object with meta and data.attributes.');
    }
    const name = typeof event.meta.event_name === 'string' ? event.meta.event_name : headerValue(headers, 'x-event-name') ?? '';
    const data = event.data;
    const a = event.data.attributes as Record<string, unknown>;
    // Lemon Squeezy's events carry no id of their own: a redelivery sends the same bytes.
    const eventId = `ls_${createHash('sha256').update(rawBody).digest('hex').slice(0, 40)}`;
    const malformed = (why: string): Notification => ({ kind: 'ignored', type: `${name} (malformed: ${why})`, malformed: why });
    switch (name) {
      case 'order_created': {
        const orderId = idString(data.id);
        if (!orderId) return malformed('data.id must be an id');
        if (a.status !== 'paid') return { kind: 'ignored', type: `${name} (${String(a.status)})` };
        return {
          kind: 'paid',
          sessionId: orderId,
          paymentId: orderId,
          email: typeof a.user_email === 'string' ? a.user_email : null,
          amountTotal: Number.isSafeInteger(a.total) ? (a.total as number) : null,
          currency: typeof a.currency === 'string' ? a.currency.toLowerCase() : null,
          invoiceId: orderId,
          subscriptionId: null,
          licenseKey: offerLicenseKey(event.meta.custom_data),
        };
      }
      case 'subscription_created': {
        // A subscription's first order: the subscription is what the license follows (docs/payments.md).
        const subscriptionId = idString(data.id);
        const orderId = idString(a.order_id);
        if (!subscriptionId || !orderId) return malformed('data.id and order_id must be ids');
        return {
          kind: 'paid',
          sessionId: orderId,
          paymentId: orderId,
          email: typeof a.user_email === 'string' ? a.user_email : null,
          amountTotal: null,
          currency: null,
          invoiceId: orderId,
          subscriptionId,
          licenseKey: null,
        };
      }
      case 'order_refunded': {
        const orderId = idString(data.id);
        if (!orderId) return malformed('data.id must be an id');
        // Only a full refund takes the licenses back; a partial one is a goodwill gesture.
        if (a.refunded !== true) return { kind: 'ignored', type: `${name} (partial)` };
        return { kind: 'reversed', paymentId: orderId, reason: 'refunded' };
      }
      case 'subscription_payment_failed': {
        const subscriptionId = idString(a.subscription_id);
        if (!subscriptionId) return malformed('subscription_id must be an id');
        const urls = isRecord(a.urls) ? a.urls : {};
        return { kind: 'payment_failed', eventId, subscriptionId, email: typeof a.user_email === 'string' ? a.user_email : null, payUrl: typeof urls.invoice_url === 'string' ? urls.invoice_url : null };
      }
      default: {
        if (SUBSCRIPTION_EVENTS.has(name)) {
          const subscriptionId = idString(data.id);
          return subscriptionId ? { kind: 'subscription', eventId, subscriptionId } : malformed('data.id must be an id');
        }
        if (INVOICE_EVENTS.has(name)) {
          const subscriptionId = idString(a.subscription_id);
          return subscriptionId ? { kind: 'subscription', eventId, subscriptionId } : malformed('subscription_id must be an id');
        }
        return { kind: 'ignored', type: name || 'unnamed event' };
      }
    }
  }

  /**
   * The order's items (variant id as the price id), or null for a subscription's first order: its
   * `subscription_created` creates the license linked to the subscription, so the order's own event
   * must not make a second, unlinked one. The order's event does not say; the API does.
   */
  /**
   * A subscription's first order is left to its subscription events: told by the variant (its
   * `is_subscription`), not by looking the subscription up, which Lemon Squeezy may not show yet
   * when `order_created` arrives (an unlinked license would then be made beside the subscription's).
   */
  async lineItems(credential: string, orderId: string): Promise<LineItem[] | null> {
    const items = await this.ok(credential, 'the order items', () => ls.listOrderItems({ filter: { orderId } }));
    const lines = (items?.data ?? []).map((i) => ({ id: i.id, priceId: idString(i.attributes.variant_id), quantity: i.attributes.quantity || 1 }));
    for (const { priceId } of lines) {
      if (priceId === null) continue;
      const variant = await this.ok(credential, 'the variant', () => ls.getVariant(priceId));
      if (variant?.data.attributes.is_subscription) return null;
    }
    return lines;
  }

  /** Whether the variant is sold in the connected store (a key reaches every store of its user). */
  async priceExists(credential: string, variantId: string): Promise<boolean> {
    if (!/^[0-9]+$/.test(variantId)) return false;
    const found = await this.ok(credential, 'the variant', () => ls.getVariant(variantId, { include: ['product'] }));
    if (!found) return false;
    const product = (found.included ?? []).find((r) => r.type === 'products');
    return idString((product?.attributes as Record<string, unknown> | undefined)?.store_id) === openCredential(credential).storeId;
  }

  async invoice(credential: string, orderId: string): Promise<Invoice | null> {
    const order = await this.ok(credential, 'the order', () => ls.getOrder(orderId));
    const receipt = order?.data.attributes.urls?.receipt;
    return receipt ? { invoicePdf: receipt, hostedInvoiceUrl: receipt } : null;
  }

  async refreshEndpoint(credential: string, endpointId: string): Promise<void> {
    const updated = await this.ok(credential, 'the webhook', () => ls.updateWebhook(endpointId, { events: [...LEMONSQUEEZY_EVENTS] }));
    if (updated === null) throw new AppError('invalid_request', 'The webhook is gone at Lemon Squeezy: connect again to create a new one.');
  }

  async subscription(credential: string, subscriptionId: string): Promise<Subscription | null> {
    const found = await this.ok(credential, 'the subscription', () => ls.getSubscription(subscriptionId));
    if (!found) return null;
    return toSubscription(found.data.id, found.data.attributes as unknown as Record<string, unknown>);
  }

  async checkoutUrl(credential: string, c: { priceId: string; email: string; metadata: Record<string, string>; successUrl: string; cancelUrl: string }): Promise<string> {
    const { storeId } = openCredential(credential);
    const created = await this.ok(credential, 'the checkout', () =>
      ls.createCheckout(storeId, c.priceId, { checkoutData: { email: c.email, custom: c.metadata }, productOptions: { redirectUrl: c.successUrl } }),
    );
    const url = created?.data.attributes.url;
    if (!url) throw new AppError('provider_unavailable', 'Lemon Squeezy created the checkout without a page to send the customer to.');
    return url;
  }

  /** The customer's portal (a pre-signed link, valid 24 hours); Lemon Squeezy has no return address. */
  async billingPortalUrl(credential: string, customerId: string): Promise<string> {
    const customer = await this.ok(credential, 'the customer', () => ls.getCustomer(customerId));
    const url = customer?.data.attributes.urls.customer_portal;
    if (!url) throw new AppError('provider_unavailable', 'Lemon Squeezy has no customer portal for this customer.');
    return url;
  }
}

/**
 * A Lemon Squeezy subscription in the seam's terms. Its one item is the subscription's variant.
 * Lemon Squeezy reports no period start: while `past_due` or `unpaid`, `renews_at` is the renewal
 * that failed (paid up to there), which the expiry rule takes as the period's start; otherwise the
 * period runs to `renews_at` (to `ends_at` once cancelled, which then runs out at period end).
 */
export function toSubscription(id: string, a: Record<string, unknown>): Subscription {
  const status = STATUSES[String(a.status)] ?? 'incomplete';
  const renewsAt = time(a.renews_at) ?? 0;
  const endsAt = time(a.ends_at);
  const cancelled = a.status === 'cancelled' || a.cancelled === true;
  const periodEnd = cancelled && endsAt !== null ? endsAt : renewsAt;
  const item = isRecord(a.first_subscription_item) ? a.first_subscription_item : null;
  return {
    id,
    customerId: idString(a.customer_id),
    status,
    cancelAtPeriodEnd: cancelled && status !== 'canceled',
    trialEnd: a.status === 'on_trial' ? time(a.trial_ends_at) : null,
    endedAt: status === 'canceled' ? (endsAt ?? renewsAt) : null,
    items: [
      {
        id: idString(item?.id) ?? id,
        priceId: idString(a.variant_id),
        quantity: typeof item?.quantity === 'number' && item.quantity > 0 ? item.quantity : 1,
        currentPeriodStart: status === 'past_due' || status === 'unpaid' ? renewsAt : (time(a.created_at) ?? 0),
        currentPeriodEnd: periodEnd,
      },
    ],
  };
}

function describe(answer: Answer<unknown>): string {
  const cause = answer.error?.cause;
  if (Array.isArray(cause)) return cause.map((e) => (isRecord(e) ? String(e.detail ?? e.title ?? '') : String(e))).join('; ');
  return answer.error?.message ?? `HTTP ${answer.status}`;
}

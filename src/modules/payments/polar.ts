import { timingSafeEqual } from 'node:crypto';
import type { Polar } from '@polar-sh/sdk';
import type { WebhookEventType } from '@polar-sh/sdk/models/components/webhookeventtype.js';
import { Webhook } from 'standardwebhooks';
import { AppError } from '../../core/errors.ts';
import { loadedPolarSdk, polarSdk } from './polar-sdk.ts';
import { headerValue, type Invoice, type LineItem, type Notification, type PaymentProvider, type ProviderEndpoint, type Subscription, type SubscriptionStatus, type WebhookHeaders } from './provider.ts';

/** The events the endpoint subscribes to (decisions.md); everything else Polar might send is ignored. */
export const POLAR_EVENTS = [
  'order.paid',
  'order.refunded',
  'subscription.created',
  'subscription.updated',
  'subscription.active',
  'subscription.canceled',
  'subscription.uncanceled',
  'subscription.revoked',
  'subscription.past_due',
] as const satisfies readonly WebhookEventType[];

/** The Standard Webhooks tolerance on a delivery's age (and clock skew the other way), seconds. */
export const POLAR_SIGNATURE_TOLERANCE_SECONDS = 300;

const SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = ['active', 'trialing', 'past_due', 'unpaid', 'canceled', 'incomplete', 'incomplete_expired'];
const CLIENT_CACHE_MAX = 1000;

/**
 * What a Polar connection needs, kept as the seam's one sealed credential string: the access token,
 * the organization it acts for, and which of Polar's servers (sandbox or production).
 */
export interface PolarCredential {
  accessToken: string;
  organizationId: string;
  sandbox: boolean;
}

export const polarCredential = (c: PolarCredential): string => JSON.stringify({ accessToken: c.accessToken, organizationId: c.organizationId, sandbox: c.sandbox });

function credentialOf(sealed: string): PolarCredential {
  const c = JSON.parse(sealed) as Partial<PolarCredential>;
  if (typeof c.accessToken !== 'string' || typeof c.organizationId !== 'string') throw new AppError('internal_error', 'A Polar credential lacks its token or organization.');
  return { accessToken: c.accessToken, organizationId: c.organizationId, sandbox: c.sandbox === true };
}

/**
 * An organization access token (polar_oat_) acts for its own organization, and Polar refuses an
 * explicit organization_id beside it; a personal one (polar_pat_) needs it.
 */
const isOrganizationToken = (token: string): boolean => token.startsWith('polar_oat_');

export interface PolarOptions {
  /** POLAR_API_URL: another address for every call (a test double, a proxy); else sandbox or production by the connection. */
  apiUrl?: string;
  timeoutMs?: number;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
const ms = (value: Date | null | undefined): number | null => (value instanceof Date ? value.getTime() : null);

/** Polar's answer status, when the error is one (the SDK is loaded once a call has failed). */
const statusOf = (error: unknown): number | undefined => {
  const sdk = loadedPolarSdk();
  return sdk && error instanceof sdk.PolarError ? error.statusCode : undefined;
};

/** Polar's answer as the service's error model: a refused token, Polar failing, or a bug. */
function translate(error: unknown): never {
  const status = statusOf(error);
  if (status === 401 || status === 403) throw new AppError('invalid_provider_key', `Polar refused the access token (${status}).`);
  const sdk = loadedPolarSdk();
  if (
    (sdk && (error instanceof sdk.HTTPClientError || error instanceof sdk.SDKValidationError || error instanceof sdk.ResponseValidationError)) ||
    (status !== undefined && (status >= 500 || status === 429))
  ) {
    throw new AppError('provider_unavailable', 'Polar is unreachable or failed; try again shortly.');
  }
  throw error;
}

const isMissing = (error: unknown): boolean => statusOf(error) === 404;

/**
 * The license a renewal or upgrade checkout is for: its metadata's `tessera_license_key` (Polar
 * copies a checkout's metadata onto its order).
 */
function offerLicenseKey(metadata: unknown): string | null {
  const key = isRecord(metadata) ? metadata.tessera_license_key : undefined;
  return typeof key === 'string' && key.trim() !== '' ? key.trim() : null;
}

/**
 * Polar behind the provider seam, through @polar-sh/sdk for every call and the standardwebhooks
 * package for signatures. The seam's credential string is a PolarCredential (polarCredential).
 */
export class PolarProvider implements PaymentProvider {
  readonly name = 'polar';
  private readonly clients = new Map<string, Polar>();

  constructor(private readonly options: PolarOptions = {}) {}

  private async client(credential: string): Promise<{ polar: Polar; c: PolarCredential }> {
    const c = credentialOf(credential);
    let polar = this.clients.get(credential);
    if (!polar) {
      const { Polar } = await polarSdk();
      if (this.clients.size >= CLIENT_CACHE_MAX) this.clients.delete(this.clients.keys().next().value!);
      polar = new Polar({
        accessToken: c.accessToken,
        ...(this.options.apiUrl ? { serverURL: this.options.apiUrl } : { server: c.sandbox ? 'sandbox' : 'production' }),
        timeoutMs: this.options.timeoutMs ?? 20_000,
      });
      this.clients.set(credential, polar);
    }
    return { polar, c };
  }

  private async polar(credential: string): Promise<Polar> {
    return (await this.client(credential)).polar;
  }

  async connect(credential: string, url: string): Promise<ProviderEndpoint> {
    const { polar, c } = await this.client(credential);
    try {
      // The token is checked by reading the organization it is meant to act for.
      await polar.organizations.get({ id: c.organizationId });
    } catch (error) {
      this.clients.delete(credential);
      if (isMissing(error)) throw new AppError('invalid_provider_key', 'Polar has no such organization for this access token.');
      translate(error);
    }
    try {
      const endpoint = await polar.webhooks.createWebhookEndpoint({
        url,
        name: 'Tessera: licenses for purchases',
        format: 'raw',
        events: [...POLAR_EVENTS],
        ...(isOrganizationToken(c.accessToken) ? {} : { organizationId: c.organizationId }),
      });
      return { endpointId: endpoint.id, signingSecret: endpoint.secret, livemode: !c.sandbox };
    } catch (error) {
      // Polar refusing the endpoint itself (a BASE_URL it will not call) is the operator's to fix.
      if (statusOf(error) === 422) throw new AppError('invalid_request', 'Polar refused the webhook endpoint (is BASE_URL a public https address?).');
      return translate(error);
    }
  }

  async disconnect(credential: string, endpointId: string): Promise<void> {
    try {
      await (await this.polar(credential)).webhooks.deleteWebhookEndpoint({ id: endpointId });
    } catch (error) {
      if (isMissing(error)) return;
      translate(error);
    } finally {
      this.clients.delete(credential);
    }
  }

  readonly webhook = {
    label: 'Polar',
    summary: "Polar's events (registered at Polar on connect)",
    description:
      'Verified with the Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature (300 s tolerance). 400 invalid_signature when they are missing or wrong; 400 invalid_request for a body that is no event; 404 for an unknown connection; 500 on failure, so Polar retries. A handled event whose data lacks what it needs is answered 200 and ignored (logged).',
    rateLimitKey: (connectionId: string) => `polar-webhook:${connectionId}`,
  };

  parse(rawBody: Buffer, headers: WebhookHeaders, signingSecret: string, now: number): Notification {
    const id = headerValue(headers, 'webhook-id');
    const timestamp = headerValue(headers, 'webhook-timestamp');
    const signatures = headerValue(headers, 'webhook-signature');
    if (!id || !timestamp || !signatures) throw new AppError('invalid_signature', 'The webhook-id, webhook-timestamp and webhook-signature headers are required.');
    const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
    if (!Number.isFinite(seconds) || Math.abs(now / 1000 - seconds) > POLAR_SIGNATURE_TOLERANCE_SECONDS) {
      throw new AppError('invalid_signature', 'The webhook-timestamp is missing or outside the tolerance.');
    }
    // Polar's whsec_ secrets are base64 (the decoded bytes are the key); its older polar_whs_ ones are keyed with their own bytes.
    const hook = signingSecret.startsWith('whsec_') ? new Webhook(signingSecret) : new Webhook(signingSecret, { format: 'raw' });
    const expected = Buffer.from(hook.sign(id, new Date(seconds * 1000), rawBody).split(',')[1]!);
    const matches = signatures.split(' ').some((versioned) => {
      const [version, signature] = versioned.split(',');
      if (version !== 'v1' || !signature) return false;
      const given = Buffer.from(signature);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
    if (!matches) throw new AppError('invalid_signature', 'The webhook-signature does not verify.');
    let event: unknown;
    try {
      event = JSON.parse(rawBody.toString('utf8'));
    } catch {
      throw new AppError('invalid_request', 'The event is not valid JSON.');
    }
    if (!isRecord(event) || typeof event.type !== 'string' || !isRecord(event.data)) {
      throw new AppError('invalid_request', 'The body is not a Polar event: an object with a type and data.');
    }
    return notificationOf(event.type, event.data, id);
  }

  async lineItems(credential: string, orderId: string): Promise<LineItem[]> {
    try {
      const order = await (await this.polar(credential)).orders.get({ id: orderId });
      // One product per order; seat-based products sell `seats` where Stripe has a quantity.
      return [{ id: order.id, priceId: order.productId, quantity: order.seats ?? 1 }];
    } catch (error) {
      return translate(error);
    }
  }

  async priceExists(credential: string, productId: string): Promise<boolean> {
    try {
      await (await this.polar(credential)).products.get({ id: productId });
      return true;
    } catch (error) {
      // Polar answers 422 for an id that is no UUID: no such product either.
      if (isMissing(error) || (statusOf(error) === 422)) return false;
      return translate(error);
    }
  }

  async invoice(credential: string, orderId: string): Promise<Invoice | null> {
    try {
      const invoice = await (await this.polar(credential)).orders.invoice({ id: orderId });
      return { invoicePdf: invoice.url, hostedInvoiceUrl: null };
    } catch (error) {
      // Not generated yet (Polar makes it on request from the customer portal or POST .../invoice).
      if (isMissing(error) || (statusOf(error) === 422)) return null;
      return translate(error);
    }
  }

  async refreshEndpoint(credential: string, endpointId: string): Promise<void> {
    try {
      await (await this.polar(credential)).webhooks.updateWebhookEndpoint({ id: endpointId, webhookEndpointUpdate: { events: [...POLAR_EVENTS] } });
    } catch (error) {
      if (isMissing(error)) throw new AppError('invalid_request', 'The webhook endpoint is gone at Polar: connect again to create a new one.');
      translate(error);
    }
  }

  async subscription(credential: string, subscriptionId: string): Promise<Subscription | null> {
    let sub: Awaited<ReturnType<Polar['subscriptions']['get']>>;
    try {
      sub = await (await this.polar(credential)).subscriptions.get({ id: subscriptionId });
    } catch (error) {
      if (isMissing(error)) return null;
      return translate(error);
    }
    const status = (SUBSCRIPTION_STATUSES as readonly string[]).includes(sub.status) ? (sub.status as SubscriptionStatus) : 'incomplete';
    const start = sub.currentPeriodStart.getTime();
    return {
      id: sub.id,
      customerId: sub.customerId,
      status,
      cancelAtPeriodEnd: sub.cancelAtPeriodEnd,
      trialEnd: ms(sub.trialEnd),
      endedAt: ms(sub.endedAt),
      // One product per subscription: the item is the subscription itself (its id stays through a plan change).
      items: [{ id: sub.id, priceId: sub.productId, quantity: sub.seats ?? 1, currentPeriodStart: start, currentPeriodEnd: ms(sub.currentPeriodEnd) ?? start }],
    };
  }

  async checkoutUrl(credential: string, c: { priceId: string; email: string; metadata: Record<string, string>; successUrl: string; cancelUrl: string }): Promise<string> {
    try {
      const checkout = await (await this.polar(credential)).checkouts.create({ products: [c.priceId], customerEmail: c.email, metadata: c.metadata, successUrl: c.successUrl, returnUrl: c.cancelUrl });
      return checkout.url;
    } catch (error) {
      return translate(error);
    }
  }

  async billingPortalUrl(credential: string, customerId: string, returnUrl: string): Promise<string> {
    try {
      const session = await (await this.polar(credential)).customerSessions.create({ customerId, returnUrl });
      return session.customerPortalUrl;
    } catch (error) {
      return translate(error);
    }
  }
}

/**
 * A verified event in the seam's terms. `eventId` is the delivery's webhook-id, the same on every
 * retry of one event. What each handled event reads is checked first: a signed event lacking it is
 * ignored and logged (failing would answer 500 and Polar would retry it for hours).
 */
function notificationOf(type: string, data: Record<string, unknown>, eventId: string): Notification {
  const id = str(data.id);
  switch (type) {
    case 'order.paid': {
      if (!id) return malformed(type, 'id must be a string');
      const subscriptionId = str(data.subscription_id);
      // A renewal or a plan change bills the subscription again: its current state is what counts.
      if (subscriptionId && data.billing_reason !== 'subscription_create') return { kind: 'subscription', eventId, subscriptionId };
      const customer = isRecord(data.customer) ? data.customer : {};
      return {
        kind: 'paid',
        sessionId: id,
        // A refund names the order.
        paymentId: id,
        email: str(customer.email),
        amountTotal: Number.isSafeInteger(data.total_amount) ? (data.total_amount as number) : null,
        currency: str(data.currency),
        invoiceId: id,
        subscriptionId,
        licenseKey: subscriptionId ? null : offerLicenseKey(data.metadata),
      };
    }
    case 'order.refunded': {
      if (!id) return malformed(type, 'id must be a string');
      // A renewal's order is no purchase: its refund is the subscription's business (its state, read again, decides).
      const subscriptionId = str(data.subscription_id);
      if (subscriptionId && data.billing_reason !== 'subscription_create') return { kind: 'subscription', eventId, subscriptionId };
      // Only a full refund takes the licenses back; a partial one is a goodwill gesture.
      if (data.status !== 'refunded') return { kind: 'ignored', type: `${type} (partial)` };
      return { kind: 'reversed', paymentId: id, reason: 'refunded' };
    }
    case 'subscription.past_due': {
      if (!id) return malformed(type, 'id must be a string');
      const customer = isRecord(data.customer) ? data.customer : {};
      return { kind: 'payment_failed', eventId, subscriptionId: id, email: str(customer.email), payUrl: null };
    }
    case 'subscription.created':
    case 'subscription.updated':
    case 'subscription.active':
    case 'subscription.canceled':
    case 'subscription.uncanceled':
    case 'subscription.revoked':
      if (!id) return malformed(type, 'id must be a string');
      return { kind: 'subscription', eventId, subscriptionId: id };
    default:
      return { kind: 'ignored', type };
  }
}

const malformed = (type: string, why: string): Notification => ({ kind: 'ignored', type: `${type} (malformed: ${why})`, malformed: why });

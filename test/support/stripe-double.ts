import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/**
 * A Stripe test double on loopback: answers the calls the service makes (create and delete a
 * webhook endpoint, retrieve a price, list a checkout session's line items, retrieve an invoice)
 * with objects shaped as in Stripe's API reference, refuses unknown keys with 401 as Stripe does,
 * and records every request. Point the service at it with STRIPE_API_URL = double.url.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  key: string | null;
  form: URLSearchParams;
}

interface DoubleAccount {
  id: string;
  livemode: boolean;
  /** A restricted key without these permissions is refused with 403 on the calls that need them. */
  denied: Set<string>;
  prices: Map<string, Record<string, unknown>>;
  sessions: Map<string, { priceId: string; quantity: number }[]>;
  /** Line items of any session not registered one by one (load tests make a new session per request). */
  anySession?: { priceId: string; quantity: number }[];
  invoices: Map<string, Record<string, unknown>>;
  customers: Set<string>;
  subscriptions: Map<string, DoubleSubscription>;
}

/** A subscription as the double keeps it; answered in Stripe's shape (items carry the period since 2025-03-31). */
export interface DoubleSubscription {
  id: string;
  customer: string;
  status: string;
  cancel_at_period_end: boolean;
  trial_end: number | null;
  ended_at: number | null;
  items: { id: string; priceId: string; quantity: number; current_period_start: number; current_period_end: number }[];
}

const id = (prefix: string): string => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
const now = (): number => Math.floor(Date.now() / 1000);

function stripeError(res: ServerResponse, status: number, error: Record<string, unknown>): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
  res.end(JSON.stringify({ error }));
}

export class StripeDouble {
  readonly requests: RecordedRequest[] = [];
  /** Off for load runs: nothing is kept per request. */
  record = true;
  /**
   * Load runs (bench/payment-scenarios.ts): each retrieve of a subscription first moves its items'
   * periods on by one period, as a renewal does, so every renewal event replayed by the load
   * generator (which sends requests made beforehand) meets a renewed subscription.
   */
  renewOnRetrieve = false;
  /** Webhook endpoints that exist, by id. */
  readonly endpoints = new Map<string, { key: string; url: string; secret: string; enabled_events: string[] }>();
  private readonly accounts = new Map<string, DoubleAccount>();
  private server?: Server;
  /** Answers this many next calls with this status (500: Stripe failing). */
  private failures: { status: number; left: number } = { status: 0, left: 0 };
  /** Calls whose `METHOD /path` starts with this answer `status` until heal() (one route failing, the others not). */
  private failingRoute: { prefix: string; status: number } | null = null;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** A Stripe account reached with `key` (rk_test_... by default a fresh one). */
  account(options: { key?: string; livemode?: boolean; denied?: string[] } = {}): string {
    const key = options.key ?? `rk_test_${randomBytes(16).toString('hex')}`;
    this.accounts.set(key, {
      id: id('acct'),
      livemode: options.livemode ?? false,
      denied: new Set(options.denied),
      prices: new Map(),
      sessions: new Map(),
      invoices: new Map(),
      customers: new Set(),
      subscriptions: new Map(),
    });
    return key;
  }

  price(key: string, priceId = id('price'), unitAmount = 4900): string {
    const acct = this.get(key);
    acct.prices.set(priceId, {
      id: priceId,
      object: 'price',
      active: true,
      billing_scheme: 'per_unit',
      created: now(),
      currency: 'usd',
      custom_unit_amount: null,
      livemode: acct.livemode,
      lookup_key: null,
      metadata: {},
      nickname: null,
      product: id('prod'),
      recurring: null,
      tax_behavior: 'unspecified',
      tiers_mode: null,
      transform_quantity: null,
      type: 'one_time',
      unit_amount: unitAmount,
      unit_amount_decimal: String(unitAmount),
    });
    return priceId;
  }

  /** A checkout session's line items (prices need not be mapped; they need to exist here). */
  session(key: string, items: { priceId: string; quantity?: number }[], sessionId = id('cs_test')): string {
    this.get(key).sessions.set(sessionId, items.map((i) => ({ priceId: i.priceId, quantity: i.quantity ?? 1 })));
    return sessionId;
  }

  /** Every session id not registered with `session()` answers these line items. */
  anySession(key: string, items: { priceId: string; quantity?: number }[]): void {
    this.get(key).anySession = items.map((i) => ({ priceId: i.priceId, quantity: i.quantity ?? 1 }));
  }

  invoice(key: string, invoiceId = id('in')): string {
    const acct = this.get(key);
    acct.invoices.set(invoiceId, {
      id: invoiceId,
      object: 'invoice',
      account_country: 'US',
      amount_due: 4900,
      amount_paid: 4900,
      amount_remaining: 0,
      currency: 'usd',
      customer: id('cus'),
      hosted_invoice_url: `https://invoice.stripe.com/i/${acct.id}/test_${invoiceId}`,
      invoice_pdf: `https://pay.stripe.com/invoice/${acct.id}/test_${invoiceId}/pdf`,
      livemode: acct.livemode,
      number: `TESS-${invoiceId.slice(-4)}`,
      status: 'paid',
      created: now(),
    });
    return invoiceId;
  }

  /**
   * A subscription of a new customer (unix seconds): one item per price, the period `periodDays`
   * long starting `start` (now by default).
   */
  subscription(key: string, o: { items: { priceId: string; quantity?: number }[]; status?: string; start?: number; periodDays?: number; trialEnd?: number | null }): DoubleSubscription {
    const acct = this.get(key);
    const start = o.start ?? now();
    const customer = id('cus');
    acct.customers.add(customer);
    const sub: DoubleSubscription = {
      id: id('sub'),
      customer,
      status: o.status ?? 'active',
      cancel_at_period_end: false,
      trial_end: o.trialEnd ?? null,
      ended_at: null,
      items: o.items.map((i) => ({ id: id('si'), priceId: i.priceId, quantity: i.quantity ?? 1, current_period_start: start, current_period_end: start + (o.periodDays ?? 30) * 86_400 })),
    };
    acct.subscriptions.set(sub.id, sub);
    return sub;
  }

  /** Changes the subscription as Stripe would (the next retrieve answers the new state). */
  updateSubscription(key: string, subscriptionId: string, change: (sub: DoubleSubscription) => void): DoubleSubscription {
    const sub = this.get(key).subscriptions.get(subscriptionId);
    if (!sub) throw new Error(`No double subscription ${subscriptionId}`);
    change(sub);
    return sub;
  }

  /** The subscription in Stripe's API shape (what retrieve answers and what events carry). */
  subscriptionObject(key: string, subscriptionId: string): Record<string, unknown> {
    const acct = this.get(key);
    const sub = acct.subscriptions.get(subscriptionId)!;
    return {
      id: sub.id,
      object: 'subscription',
      billing_cycle_anchor: sub.items[0]?.current_period_start ?? now(),
      cancel_at: sub.cancel_at_period_end ? (sub.items[0]?.current_period_end ?? null) : null,
      cancel_at_period_end: sub.cancel_at_period_end,
      canceled_at: sub.ended_at,
      collection_method: 'charge_automatically',
      created: sub.items[0]?.current_period_start ?? now(),
      currency: 'usd',
      customer: sub.customer,
      ended_at: sub.ended_at,
      items: {
        object: 'list',
        data: sub.items.map((item) => ({
          id: item.id,
          object: 'subscription_item',
          created: item.current_period_start,
          current_period_end: item.current_period_end,
          current_period_start: item.current_period_start,
          metadata: {},
          price: acct.prices.get(item.priceId) ?? { id: item.priceId, object: 'price' },
          quantity: item.quantity,
          subscription: sub.id,
        })),
        has_more: false,
        total_count: sub.items.length,
        url: `/v1/subscription_items?subscription=${sub.id}`,
      },
      latest_invoice: null,
      livemode: acct.livemode,
      metadata: {},
      start_date: sub.items[0]?.current_period_start ?? now(),
      status: sub.status,
      trial_end: sub.trial_end,
      trial_start: null,
    };
  }

  /** The next `count` calls answer `status` with Stripe's api_error body. */
  fail(status: number, count = Number.MAX_SAFE_INTEGER): void {
    this.failures = { status, left: count };
  }

  /** Calls whose `METHOD /path` starts with `prefix` answer `status` until heal(). */
  failRoute(prefix: string, status: number): void {
    this.failingRoute = { prefix, status };
  }

  heal(): void {
    this.failures = { status: 0, left: 0 };
    this.failingRoute = null;
  }

  calls(method: string, pathPrefix: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(pathPrefix));
  }

  /** The signing secret of the endpoint the service registered for `url`. */
  secretFor(url: string): string {
    const endpoint = [...this.endpoints.values()].find((e) => e.url === url);
    if (!endpoint) throw new Error(`No webhook endpoint registered for ${url}`);
    return endpoint.secret;
  }

  private get(key: string): DoubleAccount {
    const acct = this.accounts.get(key);
    if (!acct) throw new Error(`Unknown double key ${key}`);
    return acct;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://double');
    const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    for (const [k, v] of url.searchParams) form.append(k, v);
    if (this.record) this.requests.push({ method: req.method ?? '', path: url.pathname, key, form });

    if (this.failingRoute && `${req.method} ${url.pathname}`.startsWith(this.failingRoute.prefix)) {
      return stripeError(res, this.failingRoute.status, { type: 'api_error', message: 'An unknown error occurred' });
    }
    if (this.failures.left > 0) {
      this.failures.left--;
      return stripeError(res, this.failures.status, { type: 'api_error', message: 'An unknown error occurred' });
    }
    const acct = key ? this.accounts.get(key) : undefined;
    if (!key || !acct) {
      const masked = key ? `${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` : '';
      return stripeError(res, 401, {
        type: 'invalid_request_error',
        message: key ? `Invalid API Key provided: ${masked}` : "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
      });
    }
    const route = `${req.method} ${url.pathname}`;
    const permission =
      route.startsWith('POST /v1/webhook_endpoints') || route.startsWith('DELETE /v1/webhook_endpoints')
        ? 'rak_webhook_write'
        : route.startsWith('GET /v1/subscriptions')
          ? 'rak_subscription_read'
          : route.startsWith('POST /v1/billing_portal')
            ? 'rak_billing_portal_session_write'
            : route === 'POST /v1/checkout/sessions'
              ? 'rak_checkout_session_write'
              : null;
    if (permission && acct.denied.has(permission)) {
      return stripeError(res, 403, {
        type: 'invalid_request_error',
        message: `The provided key '${key.slice(0, 8)}***${key.slice(-4)}' does not have the required permissions for this endpoint on account '${acct.id}'. Having the '${permission}' permission would allow this request to continue.`,
      });
    }
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(JSON.stringify(body));
    };
    const missing = (kind: string, objectId: string) =>
      stripeError(res, 404, { code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing', message: `No such ${kind}: '${objectId}'`, param: 'id', type: 'invalid_request_error' });

    let m: RegExpExecArray | null;
    if (route === 'POST /v1/webhook_endpoints') {
      const endpoint = {
        id: id('we'),
        object: 'webhook_endpoint',
        api_version: null,
        application: null,
        created: now(),
        description: form.get('description'),
        enabled_events: [...form.entries()].filter(([k]) => k.startsWith('enabled_events[')).map(([, v]) => v),
        livemode: acct.livemode,
        metadata: {},
        secret: `whsec_${randomBytes(24).toString('base64url')}`,
        status: 'enabled',
        url: form.get('url') ?? '',
      };
      this.endpoints.set(endpoint.id, { key, url: endpoint.url, secret: endpoint.secret, enabled_events: endpoint.enabled_events });
      return json(endpoint);
    }
    if ((m = /^POST \/v1\/webhook_endpoints\/([^/]+)$/.exec(route))) {
      const endpoint = this.endpoints.get(m[1]!);
      if (!endpoint || endpoint.key !== key) return missing('webhook_endpoint', m[1]!);
      const events = [...form.entries()].filter(([k]) => k.startsWith('enabled_events[')).map(([, v]) => v);
      if (events.length) endpoint.enabled_events = events;
      return json({ id: m[1], object: 'webhook_endpoint', enabled_events: endpoint.enabled_events, livemode: acct.livemode, status: 'enabled', url: endpoint.url, api_version: null, application: null, created: now(), description: null, metadata: {} });
    }
    if ((m = /^GET \/v1\/subscriptions\/([^/]+)$/.exec(route))) {
      const sub = acct.subscriptions.get(m[1]!);
      if (sub && this.renewOnRetrieve) for (const item of sub.items) [item.current_period_start, item.current_period_end] = [item.current_period_end, 2 * item.current_period_end - item.current_period_start];
      return acct.subscriptions.has(m[1]!) ? json(this.subscriptionObject(key, m[1]!)) : missing('subscription', m[1]!);
    }
    if (route === 'POST /v1/checkout/sessions') {
      const priceId = form.get('line_items[0][price]') ?? '';
      if (!acct.prices.has(priceId)) return missing('price', priceId);
      const sessionId = id('cs_test');
      const metadata = Object.fromEntries([...form.entries()].flatMap(([k, v]) => (/^metadata\[(.+)\]$/.exec(k) ? [[/^metadata\[(.+)\]$/.exec(k)![1]!, v]] : [])));
      acct.sessions.set(sessionId, [{ priceId, quantity: Number(form.get('line_items[0][quantity]') ?? 1) }]);
      return json({
        id: sessionId,
        object: 'checkout.session',
        cancel_url: form.get('cancel_url'),
        customer_email: form.get('customer_email'),
        livemode: acct.livemode,
        metadata,
        mode: form.get('mode'),
        payment_status: 'unpaid',
        status: 'open',
        success_url: form.get('success_url'),
        url: `https://checkout.stripe.com/c/pay/${sessionId}`,
      });
    }
    if (route === 'POST /v1/billing_portal/sessions') {
      const customer = form.get('customer') ?? '';
      if (!acct.customers.has(customer)) return missing('customer', customer);
      const sessionId = id('bps');
      return json({
        id: sessionId,
        object: 'billing_portal.session',
        configuration: id('bpc'),
        created: now(),
        customer,
        flow: null,
        livemode: acct.livemode,
        locale: null,
        on_behalf_of: null,
        return_url: form.get('return_url'),
        url: `https://billing.stripe.com/p/session/test_${sessionId}`,
      });
    }
    if ((m = /^DELETE \/v1\/webhook_endpoints\/([^/]+)$/.exec(route))) {
      const endpoint = this.endpoints.get(m[1]!);
      if (!endpoint || endpoint.key !== key) return missing('webhook_endpoint', m[1]!);
      this.endpoints.delete(m[1]!);
      return json({ id: m[1], object: 'webhook_endpoint', deleted: true });
    }
    if ((m = /^GET \/v1\/prices\/([^/]+)$/.exec(route))) {
      const price = acct.prices.get(m[1]!);
      return price ? json(price) : missing('price', m[1]!);
    }
    if ((m = /^GET \/v1\/checkout\/sessions\/([^/]+)\/line_items$/.exec(route))) {
      const items = acct.sessions.get(m[1]!) ?? acct.anySession;
      if (!items) return missing('checkout.session', m[1]!);
      const data = items.map((item, i) => {
        const price = acct.prices.get(item.priceId) ?? { id: item.priceId, object: 'price', unit_amount: 0, currency: 'usd' };
        const amount = Number(price.unit_amount ?? 0) * item.quantity;
        return {
          id: `li_${m![1]!.slice(-10)}${i}`,
          object: 'item',
          amount_discount: 0,
          amount_subtotal: amount,
          amount_tax: 0,
          amount_total: amount,
          currency: 'usd',
          description: 'Test product',
          price,
          quantity: item.quantity,
        };
      });
      return json({ object: 'list', data, has_more: false, url: `/v1/checkout/sessions/${m[1]}/line_items` });
    }
    if ((m = /^GET \/v1\/invoices\/([^/]+)$/.exec(route))) {
      const invoice = acct.invoices.get(m[1]!);
      return invoice ? json(invoice) : missing('invoice', m[1]!);
    }
    return stripeError(res, 404, { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname}).` });
  }
}

/** Stripe event objects, shaped as in Stripe's API reference. */
export const stripeObjects = {
  checkoutSession(o: { id: string; email?: string | null; paymentStatus?: 'paid' | 'unpaid' | 'no_payment_required'; paymentIntent?: string | null; invoice?: string | null; amountTotal?: number }) {
    return {
      id: o.id,
      object: 'checkout.session',
      amount_subtotal: o.amountTotal ?? 4900,
      amount_total: o.amountTotal ?? 4900,
      currency: 'usd',
      customer: null,
      customer_details: o.email === null ? { email: null, name: null, address: null, phone: null, tax_exempt: 'none', tax_ids: [] } : { email: o.email ?? 'buyer@example.com', name: 'Buyer', address: null, phone: null, tax_exempt: 'none', tax_ids: [] },
      customer_email: null,
      invoice: o.invoice ?? null,
      livemode: false,
      metadata: {},
      mode: 'payment',
      payment_intent: o.paymentIntent === undefined ? `pi_${o.id.slice(-12)}` : o.paymentIntent,
      payment_status: o.paymentStatus ?? 'paid',
      status: 'complete',
      url: null,
    };
  },
  /** A completed checkout in subscription mode (no PaymentIntent: the subscription's invoice is paid). */
  subscriptionCheckout(o: { id: string; subscription: string; email?: string; paymentStatus?: 'paid' | 'no_payment_required' }) {
    return { ...stripeObjects.checkoutSession({ id: o.id, email: o.email, paymentStatus: o.paymentStatus, paymentIntent: null, invoice: `in_${o.id.slice(-12)}` }), mode: 'subscription', subscription: o.subscription };
  },
  /** An invoice of a subscription, as API versions since 2025-03-31 show it (parent.subscription_details). */
  subscriptionInvoice(o: { subscription: string; email?: string | null; status?: string }) {
    const invoiceId = id('in');
    return {
      id: invoiceId,
      object: 'invoice',
      amount_due: 4900,
      amount_paid: o.status === 'paid' ? 4900 : 0,
      billing_reason: 'subscription_cycle',
      currency: 'usd',
      customer: id('cus'),
      customer_email: o.email === undefined ? 'buyer@example.com' : o.email,
      hosted_invoice_url: `https://invoice.stripe.com/i/acct_test/test_${invoiceId}`,
      livemode: false,
      parent: { type: 'subscription_details', quote_details: null, subscription_details: { metadata: {}, subscription: o.subscription } },
      status: o.status ?? 'open',
    };
  },
  charge(o: { paymentIntent: string; refunded: boolean; amount?: number }) {
    const amount = o.amount ?? 4900;
    return {
      id: id('ch'),
      object: 'charge',
      amount,
      amount_captured: amount,
      amount_refunded: o.refunded ? amount : Math.floor(amount / 2),
      captured: true,
      currency: 'usd',
      disputed: false,
      livemode: false,
      paid: true,
      payment_intent: o.paymentIntent,
      refunded: o.refunded,
      status: 'succeeded',
    };
  },
  dispute(o: { paymentIntent: string; amount?: number }) {
    return {
      id: id('dp'),
      object: 'dispute',
      amount: o.amount ?? 4900,
      charge: id('ch'),
      currency: 'usd',
      is_charge_refundable: false,
      livemode: false,
      payment_intent: o.paymentIntent,
      reason: 'fraudulent',
      status: 'needs_response',
    };
  },
};

/** Any body, signed as Stripe signs events (a correctly signed body that is no proper event). */
export function signedPayload(secret: string, payload: string) {
  return { payload, header: Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now() }) };
}

/** An event as Stripe sends it, with its Stripe-Signature made by the package itself. */
export function signedEvent(secret: string, type: string, object: unknown, options: { timestamp?: number; eventId?: string } = {}) {
  const event = {
    id: options.eventId ?? id('evt'),
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: options.timestamp ?? now(),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
  const payload = JSON.stringify(event);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: options.timestamp ?? now() });
  return { payload, header, event };
}

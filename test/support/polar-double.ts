import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A Polar test double on loopback: answers the calls the service makes through @polar-sh/sdk (get
 * the organization, create/update/delete a webhook endpoint, get a product, an order, its invoice, a
 * subscription, create a checkout and a customer session) with objects shaped as in Polar's API
 * reference (test/payments/polar-double.test.ts parses every one with the package's own schemas),
 * refuses unknown tokens with 401 as Polar does, and records every request. Point the service at it
 * with POLAR_API_URL = double.url.
 */

export interface PolarRequest {
  method: string;
  path: string;
  token: string | null;
  body: Record<string, unknown> | null;
}

/** A subscription as the double keeps it (times epoch ms). */
export interface PolarDoubleSubscription {
  id: string;
  customerId: string;
  productId: string;
  status: string;
  seats: number | null;
  currentPeriodStart: number;
  currentPeriodEnd: number;
  cancelAtPeriodEnd: boolean;
  trialStart: number | null;
  trialEnd: number | null;
  endedAt: number | null;
}

export interface PolarDoubleOrder {
  id: string;
  productId: string;
  customerId: string;
  email: string;
  amount: number;
  seats: number | null;
  subscriptionId: string | null;
  billingReason: 'purchase' | 'subscription_create' | 'subscription_cycle' | 'subscription_update';
  metadata: Record<string, string>;
  status: 'paid' | 'refunded' | 'partially_refunded' | 'pending';
}

interface DoubleOrganization {
  id: string;
  products: Map<string, { name: string; recurring: boolean }>;
  orders: Map<string, PolarDoubleOrder>;
  subscriptions: Map<string, PolarDoubleSubscription>;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const CREATED = '2026-01-01T00:00:00Z';

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export class PolarDouble {
  readonly requests: PolarRequest[] = [];
  /** Webhook endpoints that exist, by id. */
  readonly endpoints = new Map<string, { token: string; organizationId: string; url: string; secret: string; events: string[] }>();
  private readonly tokens = new Map<string, DoubleOrganization>();
  private readonly organizations = new Map<string, DoubleOrganization>();
  private server?: Server;
  private failures = { status: 0, left: 0 };
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** A new organization with an organization access token: [token, organizationId]. */
  organization(o: { personal?: boolean } = {}): { token: string; organizationId: string } {
    const org: DoubleOrganization = { id: randomUUID(), products: new Map(), orders: new Map(), subscriptions: new Map() };
    const token = `${o.personal ? 'polar_pat_' : 'polar_oat_'}${randomBytes(18).toString('base64url').replace(/[-_]/g, 'x')}`;
    this.tokens.set(token, org);
    this.organizations.set(org.id, org);
    return { token, organizationId: org.id };
  }

  /** Answers the next `count` calls with `status` (500: Polar failing). */
  fail(status: number, count = 1): void {
    this.failures = { status, left: count };
  }

  addProduct(token: string, fields: { recurring?: boolean; name?: string } = {}): string {
    const id = randomUUID();
    this.org(token).products.set(id, { name: fields.name ?? 'Pro', recurring: fields.recurring ?? false });
    return id;
  }

  addOrder(token: string, fields: Partial<PolarDoubleOrder> & { productId: string }): PolarDoubleOrder {
    const order: PolarDoubleOrder = {
      id: randomUUID(),
      customerId: randomUUID(),
      email: 'buyer@example.com',
      amount: 4900,
      seats: null,
      subscriptionId: null,
      billingReason: 'purchase',
      metadata: {},
      status: 'paid',
      ...fields,
    };
    this.org(token).orders.set(order.id, order);
    return order;
  }

  addSubscription(token: string, fields: Partial<PolarDoubleSubscription> & { productId: string }): PolarDoubleSubscription {
    const now = Date.now();
    const sub: PolarDoubleSubscription = {
      id: randomUUID(),
      customerId: randomUUID(),
      status: 'active',
      seats: null,
      currentPeriodStart: now,
      currentPeriodEnd: now + 30 * 86_400_000,
      cancelAtPeriodEnd: false,
      trialStart: null,
      trialEnd: null,
      endedAt: null,
      ...fields,
    };
    this.org(token).subscriptions.set(sub.id, sub);
    return sub;
  }

  subscriptionOf(token: string, id: string): PolarDoubleSubscription {
    return this.org(token).subscriptions.get(id)!;
  }

  private org(token: string): DoubleOrganization {
    const org = this.tokens.get(token);
    if (!org) throw new Error('unknown token');
    return org;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const url = new URL(req.url ?? '/', 'http://double');
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : null;
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, token, body });
    if (this.failures.left > 0) {
      this.failures.left--;
      return json(res, this.failures.status, { error: 'InternalServerError', detail: 'The double is failing on purpose.' });
    }
    const org = token ? this.tokens.get(token) : undefined;
    if (!org) return json(res, 401, { error: 'invalid_token', error_description: 'The access token provided is expired, revoked, malformed, or invalid for other reasons.' });
    const notFound = () => json(res, 404, { error: 'ResourceNotFound', detail: 'Not found' });
    const route = `${req.method} ${url.pathname}`;
    let m: RegExpMatchArray | null;
    if ((m = route.match(/^GET \/v1\/organizations\/([^/]+)$/))) {
      return m[1] === org.id ? json(res, 200, polarObjects.organization(org.id)) : notFound();
    }
    if (route === 'POST /v1/webhooks/endpoints') {
      // Polar: "Setting organization_id is disallowed when using an organization token."
      if (body?.organization_id != null && token!.startsWith('polar_oat_')) {
        return json(res, 422, { detail: [{ loc: ['body', 'organization_id'], msg: 'Setting organization_id is disallowed when using an organization token.', type: 'value_error' }] });
      }
      const organizationId = (body?.organization_id as string | undefined) ?? org.id;
      if (organizationId !== org.id) return json(res, 403, { error: 'NotPermitted', detail: 'Not permitted' });
      if (typeof body?.url !== 'string' || !/^https?:\/\//.test(body.url)) {
        return json(res, 422, { detail: [{ loc: ['body', 'url'], msg: 'Input should be a valid URL', type: 'url_parsing' }] });
      }
      const endpoint = { token: token!, organizationId, url: body.url, secret: `polar_whs_${randomBytes(24).toString('base64url')}`, events: body.events as string[] };
      const id = randomUUID();
      this.endpoints.set(id, endpoint);
      return json(res, 201, polarObjects.webhookEndpoint(id, endpoint));
    }
    if ((m = route.match(/^(PATCH|DELETE) \/v1\/webhooks\/endpoints\/([^/]+)$/))) {
      const endpoint = this.endpoints.get(m[2]!);
      if (!endpoint || endpoint.organizationId !== org.id) return notFound();
      if (m[1] === 'DELETE') {
        this.endpoints.delete(m[2]!);
        res.writeHead(204).end();
        return;
      }
      if (Array.isArray(body?.events)) endpoint.events = body.events as string[];
      return json(res, 200, polarObjects.webhookEndpoint(m[2]!, endpoint));
    }
    if ((m = route.match(/^GET \/v1\/products\/([^/]+)$/))) {
      const product = org.products.get(m[1]!);
      return product ? json(res, 200, polarObjects.product(m[1]!, org.id, product)) : notFound();
    }
    if ((m = route.match(/^GET \/v1\/orders\/([^/]+)(\/invoice)?$/))) {
      const order = org.orders.get(m[1]!);
      if (!order) return notFound();
      if (m[2]) return json(res, 200, { url: `https://polar-invoices.example/${order.id}.pdf` });
      const sub = order.subscriptionId ? org.subscriptions.get(order.subscriptionId) : undefined;
      return json(res, 200, polarObjects.order(order, org.id, org.products.get(order.productId), sub));
    }
    if ((m = route.match(/^GET \/v1\/subscriptions\/([^/]+)$/))) {
      const sub = org.subscriptions.get(m[1]!);
      return sub ? json(res, 200, polarObjects.subscription(sub, org.id, org.products.get(sub.productId))) : notFound();
    }
    if (route === 'POST /v1/checkouts/') {
      const products = (body?.products as string[] | undefined) ?? [];
      const productId = products[0];
      const product = productId ? org.products.get(productId) : undefined;
      if (!productId || !product) return json(res, 422, { detail: [{ loc: ['body', 'products', 0], msg: 'Product does not exist.', type: 'value_error' }] });
      return json(res, 201, polarObjects.checkout(org.id, productId, product, body!));
    }
    if (route === 'POST /v1/customer-sessions/') {
      const customerId = body?.customer_id as string | undefined;
      if (!customerId) return json(res, 422, { detail: [{ loc: ['body', 'customer_id'], msg: 'Field required', type: 'missing' }] });
      return json(res, 201, polarObjects.customerSession(customerId, org.id, (body?.return_url as string | undefined) ?? null));
    }
    return notFound();
  }
}

/** Polar's objects, with the fields its API reference lists (as the SDK's schemas require them). */
export const polarObjects = {
  organization: (id: string) => ({
    created_at: CREATED,
    modified_at: null,
    id,
    name: 'Acme',
    slug: 'acme',
    avatar_url: null,
    proration_behavior: 'invoice',
    allow_customer_updates: true,
    email: null,
    website: null,
    socials: [],
    status: 'active',
    details_submitted_at: null,
    default_presentment_currency: 'usd',
    default_tax_behavior: 'location',
    sso_enforced: false,
    account_id: null,
    payout_account_id: null,
    customer_portal_settings: { usage: { show: true }, subscription: { update_seats: true, update_plan: true } },
    feature_settings: null,
    subscription_settings: { allow_multiple_subscriptions: false, allow_customer_updates: true, proration_behavior: 'invoice', benefit_revocation_grace_period: 0, prevent_trial_abuse: false },
    notification_settings: { new_order: true, new_subscription: true },
    customer_email_settings: { order_confirmation: true, subscription_cancellation: true, subscription_confirmation: true, subscription_cycled: true, subscription_past_due: true, subscription_revoked: true, subscription_uncanceled: true, subscription_updated: true, subscription_cycled_after_trial: true, subscription_paused: true, subscription_resumed: true, subscription_renewal_reminder: true, subscription_trial_conversion_reminder: true },
    capabilities: { checkout_payments: true, subscription_renewals: true, payouts: true, refunds: true, api_access: true, dashboard_access: true },
  }),
  webhookEndpoint: (id: string, e: { organizationId: string; url: string; secret: string; events: string[] }) => ({
    created_at: CREATED,
    modified_at: null,
    id,
    url: e.url,
    name: null,
    format: 'raw',
    secret: e.secret,
    organization_id: e.organizationId,
    events: e.events,
    enabled: true,
  }),
  product: (id: string, organizationId: string, p: { name: string; recurring: boolean } = { name: 'Pro', recurring: false }) => ({
    id,
    created_at: CREATED,
    modified_at: null,
    trial_interval: null,
    trial_interval_count: null,
    name: p.name,
    description: null,
    visibility: 'public',
    recurring_interval: p.recurring ? 'month' : null,
    recurring_interval_count: p.recurring ? 1 : null,
    meter_interval: null,
    meter_interval_count: null,
    is_recurring: p.recurring,
    is_archived: false,
    organization_id: organizationId,
    metadata: {},
    prices: [
      {
        created_at: CREATED,
        modified_at: null,
        id: `${id.slice(0, 8)}-price`,
        source: 'catalog',
        amount_type: 'fixed',
        price_currency: 'usd',
        tax_behavior: null,
        is_archived: false,
        product_id: id,
        type: p.recurring ? 'recurring' : 'one_time',
        recurring_interval: p.recurring ? 'month' : null,
        price_amount: 4900,
      },
    ],
    benefits: [],
    medias: [],
    attached_custom_fields: [],
  }),
  customer: (id: string, organizationId: string, email: string) => ({
    id,
    created_at: CREATED,
    modified_at: null,
    metadata: {},
    external_id: null,
    email,
    email_verified: true,
    type: 'individual',
    name: null,
    billing_name: null,
    billing_address: null,
    tax_id: null,
    organization_id: organizationId,
    deleted_at: null,
    avatar_url: null,
  }),
  subscription(s: PolarDoubleSubscription, organizationId: string, product = { name: 'Pro', recurring: true }) {
    return {
      ...this.subscriptionBase(s),
      customer: this.customer(s.customerId, organizationId, 'buyer@example.com'),
      product: this.product(s.productId, organizationId, product),
      discount: null,
      pending_update: null,
      prices: this.product(s.productId, organizationId, product).prices,
      meters: [],
    };
  },
  subscriptionBase: (s: PolarDoubleSubscription) => ({
    created_at: CREATED,
    modified_at: null,
    id: s.id,
    amount: 4900,
    currency: 'usd',
    recurring_interval: 'month',
    recurring_interval_count: 1,
    status: s.status,
    current_period_start: iso(s.currentPeriodStart),
    current_period_end: iso(s.currentPeriodEnd),
    current_meter_period_start: null,
    current_meter_period_end: null,
    trial_start: iso(s.trialStart),
    trial_end: iso(s.trialEnd),
    cancel_at_period_end: s.cancelAtPeriodEnd,
    canceled_at: s.cancelAtPeriodEnd || s.endedAt !== null ? iso(s.endedAt ?? s.currentPeriodStart) : null,
    started_at: iso(s.currentPeriodStart),
    ends_at: s.cancelAtPeriodEnd ? iso(s.currentPeriodEnd) : null,
    ended_at: iso(s.endedAt),
    pause_at_period_end: false,
    paused_at: null,
    resumes_at: null,
    customer_id: s.customerId,
    product_id: s.productId,
    discount_id: null,
    checkout_id: null,
    seats: s.seats,
    customer_cancellation_reason: null,
    customer_cancellation_comment: null,
    metadata: {},
  }),
  order(o: PolarDoubleOrder, organizationId: string, product = { name: 'Pro', recurring: false }, sub?: PolarDoubleSubscription) {
    const refunded = o.status === 'refunded' ? o.amount : 0;
    return {
      id: o.id,
      created_at: CREATED,
      modified_at: null,
      status: o.status,
      paid: o.status !== 'pending',
      subtotal_amount: o.amount,
      discount_amount: 0,
      net_amount: o.amount,
      tax_amount: 0,
      total_amount: o.amount,
      applied_balance_amount: 0,
      due_amount: 0,
      refunded_amount: refunded,
      refunded_tax_amount: 0,
      currency: 'usd',
      billing_reason: o.billingReason,
      billing_name: null,
      billing_address: null,
      invoice_number: `ACME-${o.id.slice(0, 4)}`,
      is_invoice_generated: true,
      receipt_number: null,
      seats: o.seats,
      customer_id: o.customerId,
      product_id: o.productId,
      discount_id: null,
      subscription_id: o.subscriptionId,
      checkout_id: null,
      metadata: o.metadata,
      platform_fee_amount: 0,
      platform_fee_currency: null,
      customer: { ...this.customer(o.customerId, organizationId, o.email) },
      product: this.product(o.productId, organizationId, product),
      discount: null,
      subscription: sub ? this.subscriptionBase(sub) : null,
      items: [{ created_at: CREATED, modified_at: null, id: randomUUID(), label: product.name, amount: o.amount, tax_amount: 0, proration: false, product_price_id: null }],
      description: product.name,
      refundable_amount: o.amount - refunded,
      refundable_tax_amount: 0,
    };
  },
  checkout(organizationId: string, productId: string, product: { name: string; recurring: boolean }, body: Record<string, unknown>) {
    const id = randomUUID();
    const p = this.product(productId, organizationId, product);
    return {
      id,
      created_at: CREATED,
      modified_at: null,
      payment_processor: 'stripe',
      status: 'open',
      client_secret: `polar_c_${randomBytes(16).toString('hex')}`,
      url: `https://sandbox.polar.sh/checkout/polar_c_${id}`,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      success_url: (body.success_url as string | undefined) ?? 'https://polar.sh/',
      return_url: (body.return_url as string | undefined) ?? null,
      embed_origin: null,
      amount: 4900,
      discount_amount: 0,
      net_amount: 4900,
      tax_amount: null,
      tax_behavior: null,
      total_amount: 4900,
      currency: 'usd',
      allow_trial: null,
      active_trial_interval: null,
      active_trial_interval_count: null,
      trial_end: null,
      organization_id: organizationId,
      product_id: productId,
      product_price_id: p.prices[0]!.id,
      discount_id: null,
      allow_discount_codes: true,
      require_billing_address: false,
      is_discount_applicable: true,
      is_free_product_price: false,
      is_payment_required: true,
      is_payment_setup_required: false,
      is_payment_form_required: true,
      customer_id: null,
      is_business_customer: false,
      customer_name: null,
      customer_email: (body.customer_email as string | undefined) ?? null,
      customer_ip_address: null,
      customer_billing_name: null,
      customer_billing_address: null,
      customer_tax_id: null,
      payment_processor_metadata: {},
      billing_address_fields: { country: 'required', state: 'disabled', city: 'disabled', postal_code: 'disabled', line1: 'disabled', line2: 'disabled' },
      trial_interval: null,
      trial_interval_count: null,
      metadata: (body.metadata as Record<string, string> | undefined) ?? {},
      external_customer_id: null,
      products: [p],
      product: p,
      product_price: p.prices[0],
      prices: { [productId]: p.prices },
      discount: null,
      subscription_id: null,
      attached_custom_fields: [],
      customer_metadata: {},
    };
  },
  customerSession(customerId: string, organizationId: string, returnUrl: string | null) {
    const token = `polar_cst_${randomBytes(16).toString('hex')}`;
    return {
      created_at: CREATED,
      modified_at: null,
      id: randomUUID(),
      token,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      return_url: returnUrl,
      customer_portal_url: `https://sandbox.polar.sh/acme/portal?customer_session_token=${token}`,
      customer_id: customerId,
      customer: this.customer(customerId, organizationId, 'buyer@example.com'),
    };
  },
};

/**
 * A Standard Webhooks delivery of `{type, timestamp, data}` signed with the endpoint's secret: a
 * `whsec_` secret is base64 (its decoded bytes are the key); an older `polar_whs_` one is keyed with
 * its own bytes, which is what Polar's SDK does by base64-encoding it first.
 */
export function polarSignedEvent(secret: string, type: string, data: unknown, options: { timestamp?: number; id?: string } = {}) {
  const payload = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
  const id = options.id ?? `msg_${randomBytes(12).toString('hex')}`;
  const at = new Date(options.timestamp ?? Date.now());
  const key = secret.startsWith('whsec_') ? secret : Buffer.from(secret, 'utf8').toString('base64');
  const signature = new Webhook(key).sign(id, at, payload);
  return { payload, headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature } };
}

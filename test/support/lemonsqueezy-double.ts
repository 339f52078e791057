import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { call, type Tenant, type TestContext, useTestApp } from './app.ts';
import type { StoreKind } from './stores.ts';

/**
 * Lemon Squeezy's API on loopback, shaped from its API reference (JSON:API documents under
 * `application/vnd.api+json`, numeric ids sent as strings, `Authorization: Bearer <key>`): the calls
 * the adapter makes through `@lemonsqueezy/lemonsqueezy.js`, and webhook bodies signed as Lemon
 * Squeezy signs them (`X-Signature`: hex HMAC-SHA256 of the raw body with the webhook's secret).
 */

export interface LsWebhook {
  id: string;
  storeId: string;
  url: string;
  events: string[];
  secret: string;
  testMode: boolean;
}

export interface LsSubscription {
  id: string;
  storeId: string;
  customerId: string;
  orderId: string;
  itemId: string;
  variantId: string;
  quantity: number;
  email: string;
  status: 'on_trial' | 'active' | 'paused' | 'past_due' | 'unpaid' | 'cancelled' | 'expired';
  cancelled: boolean;
  trialEndsAt: string | null;
  renewsAt: string;
  endsAt: string | null;
}

interface LsOrder {
  id: string;
  storeId: string;
  customerId: string;
  email: string;
  total: number;
  currency: string;
  status: 'paid' | 'refunded';
  refunded: boolean;
  items: { id: string; variantId: string; quantity: number }[];
  testMode: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '.000000Z');

export class LemonSqueezyDouble {
  private server?: Server;
  url = '';
  /** api key → the stores it may use. */
  readonly keys = new Map<string, Set<string>>();
  readonly webhooks = new Map<string, LsWebhook>();
  readonly variants = new Map<string, { storeId: string; isSubscription: boolean }>();
  readonly orders = new Map<string, LsOrder>();
  readonly subscriptions = new Map<string, LsSubscription>();
  readonly checkouts: { storeId: string; variantId: string; email: string | undefined; custom: Record<string, string>; redirectUrl: string | undefined }[] = [];
  /** Requests seen, `METHOD path` with the key used. */
  readonly requests: { method: string; path: string; key: string | null }[] = [];
  /** When set, every API call answers this status (500: LS failing). */
  failWith: number | null = null;
  /** The next `left` calls answer `status` (fail()). */
  private failures = { status: 0, left: 0 };
  /** Each answer waits this long (the concurrency test interleaves calls with it). */
  delayMs = 0;
  private n = 1000;

  next(): string {
    return String(++this.n);
  }

  /** Answers the next `count` calls with `status`. */
  fail(status: number, count = 1): void {
    this.failures = { status, left: count };
  }

  /** A new API key with one store of its own. */
  account(): { apiKey: string; storeId: string } {
    const storeId = this.next();
    const apiKey = `ls_test_${randomBytes(12).toString('hex')}.${storeId}`;
    this.keys.set(apiKey, new Set([storeId]));
    return { apiKey, storeId };
  }

  /** A variant of a product of the store. */
  variant(storeId: string, o: { subscription?: boolean } = {}): string {
    const id = this.next();
    this.variants.set(id, { storeId, isSubscription: o.subscription ?? false });
    return id;
  }

  /** A second store for a key: Lemon Squeezy keys reach every store of their user. */
  addStore(apiKey: string): string {
    const storeId = this.next();
    this.keys.get(apiKey)!.add(storeId);
    return storeId;
  }

  order(storeId: string, o: { variantId: string; email: string; quantity?: number; total?: number }): LsOrder {
    const order: LsOrder = {
      id: this.next(),
      storeId,
      customerId: this.next(),
      email: o.email,
      total: o.total ?? 4900,
      currency: 'USD',
      status: 'paid',
      refunded: false,
      items: [{ id: this.next(), variantId: o.variantId, quantity: o.quantity ?? 1 }],
      testMode: true,
    };
    this.orders.set(order.id, order);
    return order;
  }

  /** A subscription with its first order (as a checkout of a subscription variant makes). */
  subscription(storeId: string, o: { variantId: string; email: string; quantity?: number; status?: LsSubscription['status']; renewsAt?: number; trialEndsAt?: number | null }): { sub: LsSubscription; order: LsOrder } {
    const order = this.order(storeId, { variantId: o.variantId, email: o.email, quantity: o.quantity });
    const sub: LsSubscription = {
      id: this.next(),
      storeId,
      customerId: order.customerId,
      orderId: order.id,
      itemId: this.next(),
      variantId: o.variantId,
      quantity: o.quantity ?? 1,
      email: o.email,
      status: o.status ?? 'active',
      cancelled: false,
      trialEndsAt: o.trialEndsAt ? iso(o.trialEndsAt) : null,
      renewsAt: iso(o.renewsAt ?? Date.now() + 30 * 86_400_000),
      endsAt: null,
    };
    this.subscriptions.set(sub.id, sub);
    return { sub, order };
  }

  orderResource(order: LsOrder) {
    const item = order.items[0]!;
    return {
      type: 'orders',
      id: order.id,
      attributes: {
        store_id: Number(order.storeId),
        customer_id: Number(order.customerId),
        identifier: `id-${order.id}`,
        order_number: Number(order.id),
        user_name: 'Buyer',
        user_email: order.email,
        currency: order.currency,
        currency_rate: '1.0000',
        subtotal: order.total,
        discount_total: 0,
        tax: 0,
        total: order.total,
        subtotal_usd: order.total,
        total_usd: order.total,
        tax_name: null,
        tax_rate: '0.00',
        status: order.status,
        status_formatted: order.status === 'paid' ? 'Paid' : 'Refunded',
        refunded: order.refunded,
        refunded_at: order.refunded ? iso(Date.now()) : null,
        refunded_amount: order.refunded ? order.total : 0,
        first_order_item: { id: Number(item.id), order_id: Number(order.id), product_id: 1, variant_id: Number(item.variantId), price_id: 1, product_name: 'App', variant_name: 'Default', price: order.total, quantity: item.quantity, created_at: iso(Date.now()), updated_at: iso(Date.now()), test_mode: order.testMode },
        urls: { receipt: `https://app.lemonsqueezy.com/my-orders/${order.id}?signature=abc` },
        created_at: iso(Date.now()),
        updated_at: iso(Date.now()),
        test_mode: order.testMode,
      },
      relationships: {},
      links: { self: `${this.url}/v1/orders/${order.id}` },
    };
  }

  subscriptionResource(sub: LsSubscription) {
    return {
      type: 'subscriptions',
      id: sub.id,
      attributes: {
        store_id: Number(sub.storeId),
        customer_id: Number(sub.customerId),
        order_id: Number(sub.orderId),
        order_item_id: 1,
        product_id: 1,
        variant_id: Number(sub.variantId),
        product_name: 'App',
        variant_name: 'Monthly',
        user_name: 'Subscriber',
        user_email: sub.email,
        status: sub.status,
        status_formatted: sub.status,
        card_brand: 'visa',
        card_last_four: '4242',
        pause: null,
        cancelled: sub.cancelled,
        trial_ends_at: sub.trialEndsAt,
        billing_anchor: 1,
        first_subscription_item: { id: Number(sub.itemId), subscription_id: Number(sub.id), price_id: 1, quantity: sub.quantity, is_usage_based: false, created_at: iso(Date.now()), updated_at: iso(Date.now()) },
        urls: {
          update_payment_method: `https://shop.lemonsqueezy.com/subscription/${sub.id}/payment-details?signature=x`,
          customer_portal: `https://shop.lemonsqueezy.com/billing?customer=${sub.customerId}&signature=x`,
          customer_portal_update_subscription: `https://shop.lemonsqueezy.com/billing/${sub.id}/update?signature=x`,
        },
        renews_at: sub.renewsAt,
        ends_at: sub.endsAt,
        created_at: iso(Date.now()),
        updated_at: iso(Date.now()),
        test_mode: true,
      },
      relationships: {},
      links: { self: `${this.url}/v1/subscriptions/${sub.id}` },
    };
  }

  /** A subscription invoice (the object of subscription_payment_* events). */
  invoiceResource(sub: LsSubscription, status: 'paid' | 'failed' = 'paid') {
    const id = this.next();
    return {
      type: 'subscription-invoices',
      id,
      attributes: {
        store_id: Number(sub.storeId),
        subscription_id: Number(sub.id),
        customer_id: Number(sub.customerId),
        user_name: 'Subscriber',
        user_email: sub.email,
        billing_reason: 'renewal',
        status,
        total: 4900,
        currency: 'USD',
        urls: { invoice_url: `https://app.lemonsqueezy.com/my-orders/invoices/${id}?signature=x` },
        created_at: iso(Date.now()),
        updated_at: iso(Date.now()),
        test_mode: true,
      },
    };
  }

  /** A webhook body as Lemon Squeezy sends it, and its headers, signed with `secret`. */
  event(secret: string, eventName: string, data: unknown, customData?: Record<string, string>): { body: string; headers: Record<string, string> } {
    const body = JSON.stringify({ meta: { event_name: eventName, test_mode: true, webhook_id: 'wh', ...(customData ? { custom_data: customData } : {}) }, data });
    return { body, headers: { 'x-event-name': eventName, 'x-signature': createHmac('sha256', secret).update(body).digest('hex') } };
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString();
    const url = new URL(req.url ?? '/', this.url);
    const auth = req.headers.authorization ?? '';
    const key = auth.startsWith('Bearer ') ? auth.slice(7) : null;
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, key });
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, { 'content-type': 'application/vnd.api+json' });
      res.end(body === undefined ? '' : JSON.stringify(body));
    };
    const error = (status: number, title: string, detail: string) => send(status, { jsonapi: { version: '1.0' }, errors: [{ status: String(status), title, detail }] });
    const failing = this.failWith ?? (this.failures.left-- > 0 ? this.failures.status : null);
    if (failing) return error(failing, 'Server Error', 'failing on purpose');
    if (req.headers.accept !== 'application/vnd.api+json') return error(406, 'Not Acceptable', 'Accept must be application/vnd.api+json');
    const stores = key ? this.keys.get(key) : undefined;
    if (!stores) return error(401, 'Unauthenticated.', 'Unauthenticated.');
    const body = raw ? (JSON.parse(raw) as { data: { id?: string; attributes: Record<string, unknown>; relationships?: Record<string, { data: { id: string } }> } }) : undefined;
    const parts = url.pathname.split('/').filter(Boolean);
    const [, collection, id] = parts;
    const doc = (data: unknown) => ({ jsonapi: { version: '1.0' }, links: { self: `${this.url}${url.pathname}` }, data });
    const list = (data: unknown[]) => ({ jsonapi: { version: '1.0' }, meta: { page: { currentPage: 1, from: 1, lastPage: 1, perPage: 10, to: data.length, total: data.length } }, links: {}, data });
    const notFound = () => error(404, 'Not Found', 'Not found.');
    const method = req.method;

    if (collection === 'stores' && method === 'GET' && id) {
      if (!stores.has(id)) return notFound();
      return send(200, doc({ type: 'stores', id, attributes: { name: `Store ${id}`, slug: `store-${id}`, domain: `store-${id}.lemonsqueezy.com`, url: `https://store-${id}.lemonsqueezy.com`, currency: 'USD' } }));
    }
    if (collection === 'webhooks') {
      const webhookView = (w: LsWebhook) => ({ type: 'webhooks', id: w.id, attributes: { store_id: Number(w.storeId), url: w.url, events: w.events, last_sent_at: null, created_at: iso(Date.now()), updated_at: iso(Date.now()), test_mode: w.testMode } });
      if (method === 'POST' && !id) {
        const storeId = body?.data.relationships?.store?.data.id ?? '';
        if (!stores.has(storeId)) return error(422, 'Unprocessable Entity', 'The store is not yours.');
        const a = body!.data.attributes as { url?: string; events?: string[]; secret?: string };
        if (!a.url || !a.events?.length || !a.secret || a.secret.length < 6) return error(422, 'Unprocessable Entity', 'url, events and secret (6+ characters) are required.');
        const w: LsWebhook = { id: this.next(), storeId, url: a.url, events: a.events, secret: a.secret, testMode: true };
        this.webhooks.set(w.id, w);
        return send(201, doc(webhookView(w)));
      }
      const w = id ? this.webhooks.get(id) : undefined;
      if (!w || !stores.has(w.storeId)) return notFound();
      if (method === 'DELETE') {
        this.webhooks.delete(w.id);
        return send(204);
      }
      if (method === 'PATCH') {
        const a = body!.data.attributes as { events?: string[] };
        if (a.events) w.events = a.events;
        return send(200, doc(webhookView(w)));
      }
      return send(200, doc(webhookView(w)));
    }
    if (collection === 'variants' && method === 'GET' && id) {
      const v = this.variants.get(id);
      if (!v || !stores.has(v.storeId)) return notFound();
      const productId = `9${id}`;
      const body = doc({ type: 'variants', id, attributes: { product_id: Number(productId), name: 'Default', slug: `v-${id}`, price: 4900, is_subscription: v.isSubscription, interval: v.isSubscription ? 'month' : null, status: 'published', test_mode: true }, relationships: { product: { links: { related: `${this.url}/v1/variants/${id}/product` } } } });
      const included = url.searchParams.get('include')?.split(',').includes('product') ? { included: [{ type: 'products', id: productId, attributes: { store_id: Number(v.storeId), name: 'App', status: 'published', test_mode: true } }] } : {};
      return send(200, { ...body, ...included });
    }
    if (collection === 'orders' && method === 'GET' && id) {
      const o = this.orders.get(id);
      if (!o || !stores.has(o.storeId)) return notFound();
      return send(200, doc(this.orderResource(o)));
    }
    if (collection === 'order-items' && method === 'GET' && !id) {
      const orderId = url.searchParams.get('filter[order_id]');
      const o = orderId ? this.orders.get(orderId) : undefined;
      const items = o && stores.has(o.storeId) ? o.items : [];
      return send(200, list(items.map((i) => ({ type: 'order-items', id: i.id, attributes: { order_id: Number(o!.id), product_id: 1, variant_id: Number(i.variantId), price_id: 1, product_name: 'App', variant_name: 'Default', price: o!.total, quantity: i.quantity, test_mode: true } }))));
    }
    if (collection === 'subscriptions' && method === 'GET') {
      if (id) {
        const s = this.subscriptions.get(id);
        if (!s || !stores.has(s.storeId)) return notFound();
        return send(200, doc(this.subscriptionResource(s)));
      }
      const orderId = url.searchParams.get('filter[order_id]');
      const found = [...this.subscriptions.values()].filter((s) => stores.has(s.storeId) && (orderId === null || s.orderId === orderId));
      return send(200, list(found.map((s) => this.subscriptionResource(s))));
    }
    if (collection === 'customers' && method === 'GET' && id) {
      const sub = [...this.subscriptions.values()].find((s) => s.customerId === id && stores.has(s.storeId));
      if (!sub) return notFound();
      return send(200, doc({ type: 'customers', id, attributes: { store_id: Number(sub.storeId), name: 'Subscriber', email: sub.email, status: 'subscribed', urls: { customer_portal: `https://store-${sub.storeId}.lemonsqueezy.com/billing?expires=1&user=${id}&signature=x` }, test_mode: true } }));
    }
    if (collection === 'checkouts' && method === 'POST' && !id) {
      const storeId = body?.data.relationships?.store?.data.id ?? '';
      const variantId = body?.data.relationships?.variant?.data.id ?? '';
      const v = this.variants.get(variantId);
      if (!stores.has(storeId) || !v || v.storeId !== storeId) return error(422, 'Unprocessable Entity', 'No such variant in the store.');
      const a = body!.data.attributes as { checkout_data?: { email?: string; custom?: Record<string, string> }; product_options?: { redirect_url?: string } };
      this.checkouts.push({ storeId, variantId, email: a.checkout_data?.email, custom: a.checkout_data?.custom ?? {}, redirectUrl: a.product_options?.redirect_url });
      const checkoutId = randomBytes(8).toString('hex');
      return send(201, doc({ type: 'checkouts', id: checkoutId, attributes: { store_id: Number(storeId), variant_id: Number(variantId), url: `https://store-${storeId}.lemonsqueezy.com/checkout/custom/${checkoutId}?signature=x`, test_mode: true } }));
    }
    return notFound();
  }
}

/** A test app whose Lemon Squeezy package talks to a double on loopback (LEMONSQUEEZY_API_URL). */
export function useLemonSqueezyApp(kind: StoreKind): { ctx: TestContext; double: LemonSqueezyDouble } {
  const double = new LemonSqueezyDouble();
  const env: Record<string, string> = {};
  // Registered before useTestApp's own beforeAll, so the app is built with the double's address.
  beforeAll(async () => {
    await double.start();
    env.LEMONSQUEEZY_API_URL = double.url;
  });
  const ctx = useTestApp(kind, { env });
  afterAll(() => double.stop());
  return { ctx, double };
}

export interface LsConnected {
  apiKey: string;
  storeId: string;
  connectionId: string;
  secret: string;
}

/** Connects the tenant to a fresh store at the double through the API. */
export async function connectLemonSqueezy(p: { ctx: TestContext; double: LemonSqueezyDouble }, tenant: Tenant, account = p.double.account()): Promise<LsConnected> {
  const res = await call(p.ctx, { method: 'PUT', url: '/api/v1/payments/lemonsqueezy', headers: tenant.auth, json: account });
  if (res.status !== 200) throw new Error(`connect: ${res.status} ${JSON.stringify(res.body)}`);
  const webhook = p.double.webhooks.get(res.body.webhookEndpointId);
  if (!webhook) throw new Error('no webhook at the double');
  return { ...account, connectionId: webhook.url.split('/').pop()!, secret: webhook.secret };
}

/** POSTs a body with headers to the connection's Lemon Squeezy webhook route. */
export function deliverLs(ctx: TestContext, connectionId: string, e: { body: string; headers: Record<string, string> }) {
  return call(ctx, { method: 'POST', url: `/api/v1/payments/lemonsqueezy/webhook/${connectionId}`, headers: { 'content-type': 'application/json', ...e.headers }, payload: e.body });
}

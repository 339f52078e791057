import { afterAll, beforeAll } from 'vitest';
import type { AppOptions } from '../../src/app.ts';
import type { Store } from '../../src/storage/index.ts';
import { call, type Tenant, type TestContext, useTestApp } from './app.ts';
import type { StoreKind } from './stores.ts';
import { signedEvent, StripeDouble } from './stripe-double.ts';

export interface PaymentsContext {
  ctx: TestContext;
  double: StripeDouble;
}

/** A test app whose stripe package talks to a Stripe double on loopback (STRIPE_API_URL). */
export function usePaymentsApp(kind: StoreKind, extra: { env?: Record<string, string>; app?: Partial<AppOptions> } = {}): PaymentsContext {
  const double = new StripeDouble();
  const env: Record<string, string> = { ...extra.env };
  // Registered before useTestApp's own beforeAll, so the app is built with the double's address.
  beforeAll(async () => {
    await double.start();
    env.STRIPE_API_URL = double.url;
  });
  const ctx = useTestApp(kind, { ...extra, env });
  afterAll(() => double.stop());
  return { ctx, double };
}

export interface Connected {
  key: string;
  connectionId: string;
  webhookUrl: string;
  secret: string;
}

/** Connects the tenant to a fresh account at the double. */
export async function connectStripe(p: PaymentsContext, tenant: Tenant, key = p.double.account()): Promise<Connected> {
  const res = await call(p.ctx, { method: 'PUT', url: '/api/v1/payments/stripe', headers: tenant.auth, json: { restrictedKey: key } });
  if (res.status !== 200) throw new Error(`connect: ${res.status} ${JSON.stringify(res.body)}`);
  const endpoint = p.double.endpoints.get(res.body.webhookEndpointId);
  if (!endpoint) throw new Error('no endpoint at the double');
  const connectionId = endpoint.url.split('/').pop()!;
  return { key, connectionId, webhookUrl: endpoint.url, secret: endpoint.secret };
}

export async function mapPrice(p: PaymentsContext, tenant: Tenant, productId: string, body: Record<string, unknown>) {
  const res = await call(p.ctx, { method: 'POST', url: `/api/v1/products/${productId}/prices`, headers: tenant.auth, json: { maxDevices: 1, licenseType: 'perpetual', ...body } });
  if (res.status !== 200) throw new Error(`mapPrice: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** POSTs a raw event to a connection's webhook, as Stripe does. */
export function deliver(ctx: TestContext, connectionId: string, event: { payload: string; header?: string }) {
  return call(ctx, {
    method: 'POST',
    url: `/api/v1/payments/stripe/webhook/${connectionId}`,
    headers: { 'content-type': 'application/json; charset=utf-8', ...(event.header !== undefined ? { 'stripe-signature': event.header } : {}) },
    payload: event.payload,
  });
}

/** Signs and delivers an event to the connection. */
export function send(ctx: TestContext, c: Connected, type: string, object: unknown, options: { timestamp?: number } = {}) {
  return deliver(ctx, c.connectionId, signedEvent(c.secret, type, object, options));
}

/** Purchase e-mails queued to `to` (outbox rows: exactly what the worker will send). */
export async function purchaseMailsTo(store: Store, to: string): Promise<number> {
  const rows = await store.read.all(store.db.selectFrom('outbox').select('payload').where('kind', '=', 'mail'));
  return rows.filter((r) => {
    const mail = JSON.parse(r.payload) as { kind: string; to: string };
    return mail.kind === 'purchase' && mail.to === to;
  }).length;
}

export async function licensesOf(store: Store, accountId: string) {
  return store.read.all(store.db.selectFrom('licenses').selectAll().where('account_id', '=', accountId).orderBy('created_at'));
}

export async function rowCount(store: Store, table: 'payment_connections' | 'price_mappings' | 'purchases' | 'purchase_licenses'): Promise<number> {
  const rows = await store.read.all(store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')));
  return Number(rows[0]!.n);
}

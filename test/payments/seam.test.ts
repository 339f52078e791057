import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { headerValue, type LineItem, type Notification, type PaymentProvider, type WebhookHeaders } from '../../src/modules/payments/provider.ts';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { licensesOf } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

/**
 * A provider that exists only here, signing with two headers (a timestamp and an HMAC over both):
 * added as an adapter alone, its events must reach the fulfilment rules through their own route.
 */
class AcmeProvider implements PaymentProvider {
  readonly name = 'acme';
  readonly webhook = { label: 'Acme', summary: "Acme's events", description: 'Verified with Acme-Signature over Acme-Timestamp and the body.', rateLimitKey: (id: string) => `acme-webhook:${id}` };
  readonly endpoints = new Map<string, string>();
  readonly sessions = new Map<string, LineItem[]>();
  private n = 0;

  async connect(apiKey: string, url: string) {
    if (!apiKey.startsWith('acme_')) throw new AppError('invalid_provider_key', 'Acme refused the key.');
    const endpointId = `ep_${++this.n}`;
    this.endpoints.set(endpointId, url);
    return { endpointId, signingSecret: `acme_secret_${this.n}`, livemode: false };
  }
  async disconnect(_apiKey: string, endpointId: string) {
    this.endpoints.delete(endpointId);
  }
  parse(rawBody: Buffer, headers: WebhookHeaders, secret: string, now: number): Notification {
    const timestamp = headerValue(headers, 'acme-timestamp');
    const signature = headerValue(headers, 'acme-signature') ?? '';
    const expected = timestamp === undefined ? '' : acmeSign(secret, timestamp, rawBody);
    if (!timestamp || Math.abs(now - Number(timestamp)) > 300_000 || signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) {
      throw new AppError('invalid_signature', 'The Acme signature does not verify.');
    }
    const event = JSON.parse(rawBody.toString()) as { type: string; order: string; email: string };
    if (event.type !== 'order.paid') return { kind: 'ignored', type: event.type };
    return { kind: 'paid', sessionId: event.order, paymentId: event.order, email: event.email, amountTotal: 500, currency: 'eur', invoiceId: null, subscriptionId: null, licenseKey: null };
  }
  async lineItems(_apiKey: string, sessionId: string) {
    return this.sessions.get(sessionId) ?? [];
  }
  async priceExists(_apiKey: string, priceId: string) {
    return priceId.startsWith('variant_');
  }
  async invoice() {
    return null;
  }
  async refreshEndpoint() {}
  async subscription() {
    return null;
  }
  async checkoutUrl(): Promise<string> {
    throw new AppError('provider_unavailable', 'no checkouts at Acme');
  }
  async billingPortalUrl(): Promise<string> {
    throw new AppError('provider_unavailable', 'no portal at Acme');
  }
}

const acmeSign = (secret: string, timestamp: string, body: Buffer) => createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');

forEachStore('payments: a provider added as an adapter alone', (kind) => {
  const acme = new AcmeProvider();
  const ctx = useTestApp(kind, { services: { paymentProviders: [acme] } });
  let n = 0;

  async function connected() {
    const t = await createTenant(ctx);
    const connection = await ctx.services.payments.connect(cliPrincipal(t.accountId), 'acme', `acme_key_${++n}`);
    const secret = `acme_secret_${connection.webhookEndpointId.slice(3)}`;
    return { t, connection, secret };
  }
  const deliver = (connectionId: string, body: string, headers: Record<string, string>) =>
    call(ctx, { method: 'POST', url: `/api/v1/payments/acme/webhook/${connectionId}`, headers: { 'content-type': 'application/json', ...headers }, payload: body });
  const signed = (secret: string, body: string, at = Date.now()) => ({ 'acme-timestamp': String(at), 'acme-signature': acmeSign(secret, String(at), Buffer.from(body)) });

  it('its events come to its own route, verified with its own headers, and fulfil through the same rules as Stripe', async () => {
    const { t, connection, secret } = await connected();
    expect(acme.endpoints.get(connection.webhookEndpointId)).toMatch(new RegExp(`/api/v1/payments/acme/webhook/${connection.id}$`));
    const product = await createProduct(ctx, t);
    await ctx.services.payments.addMapping(cliPrincipal(t.accountId), product.id, 'acme', { priceId: 'variant_1', maxDevices: 2, licenseType: 'perpetual' });
    acme.sessions.set(`order_${n}`, [{ id: 'item_1', priceId: 'variant_1', quantity: 1 }]);
    const body = JSON.stringify({ type: 'order.paid', order: `order_${n}`, email: `acme${n}@example.com` });
    const deliveries = await Promise.all(Array.from({ length: 10 }, () => deliver(connection.id, body, signed(secret, body))));
    expect(deliveries.map((r) => r.status)).toEqual(Array(10).fill(200));
    const licenses = await licensesOf(ctx.store, t.accountId);
    expect(licenses.map((l) => [l.product_id, l.max_devices])).toEqual([[product.id, 2]]);
    const purchases = await call(ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth });
    expect(purchases.body.data).toMatchObject([{ provider: 'acme', status: 'fulfilled', licenseKeys: [licenses[0]!.key] }]);
  });

  it("a missing or wrong header is a 400 invalid_signature; Stripe's route does not take an Acme connection (404)", async () => {
    const { t, connection, secret } = await connected();
    const body = JSON.stringify({ type: 'order.paid', order: 'order_x', email: 'x@example.com' });
    const good = signed(secret, body);
    const cases = {
      noTimestamp: { 'acme-signature': good['acme-signature'] },
      noSignature: { 'acme-timestamp': good['acme-timestamp'] },
      otherTimestamp: { ...good, 'acme-timestamp': String(Date.now() - 1000) },
      stale: signed(secret, body, Date.now() - 301_000),
      wrongSecret: signed('not_the_secret', body),
    };
    for (const [name, headers] of Object.entries(cases)) {
      const res = await deliver(connection.id, body, headers);
      expect([res.status, res.body.error?.code], name).toEqual([400, 'invalid_signature']);
    }
    const stripeRoute = await call(ctx, { method: 'POST', url: `/api/v1/payments/stripe/webhook/${connection.id}`, headers: { 'content-type': 'application/json', ...good }, payload: body });
    expect(stripeRoute.status).toBe(404);
    expect((await call(ctx, { method: 'POST', url: '/api/v1/payments/nosuch/webhook/x', headers: { 'content-type': 'application/json' }, payload: '{}' })).status).toBe(404);
    expect(await licensesOf(ctx.store, t.accountId)).toEqual([]);
  });

  it("the route is in the OpenAPI document with the adapter's own text", async () => {
    const doc = await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' });
    const op = doc.body.paths['/api/v1/payments/acme/webhook/{connectionId}']?.post;
    expect(op).toMatchObject({ operationId: 'receive-acme-webhook', summary: "Acme's events" });
  });
});

describe('payments: the adapter owns its rate-limit bucket', () => {
  const acme = new AcmeProvider();
  const ctx = useTestApp('sqlite', { env: { RATE_LIMIT: 'on', RATE_LIMIT_SERVER_PER_MINUTE: '2' }, services: { paymentProviders: [acme] } });

  it('per connection: another connection of the provider is not limited', async () => {
    const ids = [];
    for (let i = 0; i < 2; i++) {
      const t = await createTenant(ctx);
      ids.push((await ctx.services.payments.connect(cliPrincipal(t.accountId), 'acme', `acme_rl_${i}`)).id);
    }
    const post = (id: string) => call(ctx, { method: 'POST', url: `/api/v1/payments/acme/webhook/${id}`, headers: { 'content-type': 'application/json' }, payload: '{}' });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(ids[0]!)).status);
    expect(statuses).toEqual([400, 400, 429]);
    expect((await post(ids[1]!)).status).toBe(400);
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { AppError } from '../../src/core/errors.ts';
import { lemonSqueezyCredential, LemonSqueezyProvider, LEMONSQUEEZY_EVENTS } from '../../src/modules/payments/lemonsqueezy.ts';
import { LemonSqueezyDouble } from '../support/lemonsqueezy-double.ts';

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (error instanceof AppError ? error.code : String(error)),
  );

describe('Lemon Squeezy adapter (provider seam, through @lemonsqueezy/lemonsqueezy.js)', () => {
  const double = new LemonSqueezyDouble();
  let lemon: LemonSqueezyProvider;
  beforeAll(async () => {
    await double.start();
    lemon = new LemonSqueezyProvider({ apiUrl: double.url, timeoutMs: 2000 });
  });
  afterAll(() => double.stop());

  const credentialOf = (a: { apiKey: string; storeId: string }) => lemonSqueezyCredential(a.apiKey, a.storeId);

  it('connects: reads the store, creates the webhook with every handled event and a generated secret, all at LEMONSQUEEZY_API_URL with the key as Bearer', async () => {
    const a = double.account();
    const endpoint = await lemon.connect(credentialOf(a), 'https://tessera.example/api/v1/payments/lemonsqueezy/webhook/con_1');
    const webhook = double.webhooks.get(endpoint.endpointId)!;
    expect(webhook).toMatchObject({ storeId: a.storeId, url: 'https://tessera.example/api/v1/payments/lemonsqueezy/webhook/con_1', events: [...LEMONSQUEEZY_EVENTS], secret: endpoint.signingSecret });
    expect(endpoint.signingSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(endpoint.livemode).toBe(false);
    expect(double.requests.filter((r) => r.key === a.apiKey).map((r) => `${r.method} ${r.path}`)).toEqual([`GET /v1/stores/${a.storeId}`, 'POST /v1/webhooks']);
  });

  it('a refused key, a store of another key, LS failing and LS unreachable are told apart', async () => {
    const a = double.account();
    expect(await code(lemon.connect(lemonSqueezyCredential('not_a_key_at_all', a.storeId), 'https://x/y'))).toBe('invalid_provider_key');
    expect(await code(lemon.connect(lemonSqueezyCredential(a.apiKey, double.account().storeId), 'https://x/y'))).toBe('invalid_request');
    double.failWith = 500;
    try {
      expect(await code(lemon.connect(credentialOf(a), 'https://x/y'))).toBe('provider_unavailable');
    } finally {
      double.failWith = null;
    }
    const down = new LemonSqueezyProvider({ apiUrl: 'http://127.0.0.1:9', timeoutMs: 2000 });
    expect(await code(down.connect(credentialOf(a), 'https://x/y'))).toBe('provider_unavailable');
    expect([...double.webhooks.values()].filter((w) => w.storeId === a.storeId)).toEqual([]);
  });

  it('disconnect deletes the webhook (204) and a webhook gone already is no error; refresh sets the events again', async () => {
    const a = double.account();
    const endpoint = await lemon.connect(credentialOf(a), 'https://x/y');
    double.webhooks.get(endpoint.endpointId)!.events = ['order_created'];
    await lemon.refreshEndpoint(credentialOf(a), endpoint.endpointId);
    expect(double.webhooks.get(endpoint.endpointId)!.events).toEqual([...LEMONSQUEEZY_EVENTS]);
    await lemon.disconnect(credentialOf(a), endpoint.endpointId);
    expect(double.webhooks.has(endpoint.endpointId)).toBe(false);
    await lemon.disconnect(credentialOf(a), endpoint.endpointId);
    expect(await code(lemon.refreshEndpoint(credentialOf(a), endpoint.endpointId))).toBe('invalid_request');
  });

  it('variants exist or not; an order lists its items (variant as price); a subscription order has none of its own', async () => {
    const a = double.account();
    const variant = double.variant(a.storeId);
    expect(await lemon.priceExists(credentialOf(a), variant)).toBe(true);
    expect(await lemon.priceExists(credentialOf(a), '999999')).toBe(false);
    expect(await lemon.priceExists(credentialOf(double.account()), variant)).toBe(false);
    // The key reaches another store of its user: that store's variant is not the connected store's.
    expect(await lemon.priceExists(credentialOf(a), double.variant(double.addStore(a.apiKey)))).toBe(false);
    expect(double.requests.at(-1)!.path).toMatch(/^\/v1\/variants\/\d+$/);
    const order = double.order(a.storeId, { variantId: variant, email: 'a@example.com', quantity: 3 });
    expect(await lemon.lineItems(credentialOf(a), order.id)).toEqual([{ id: order.items[0]!.id, priceId: variant, quantity: 3 }]);
    const { order: first } = double.subscription(a.storeId, { variantId: double.variant(a.storeId, { subscription: true }), email: 's@example.com' });
    expect(await lemon.lineItems(credentialOf(a), first.id)).toBeNull();
    expect(await lemon.invoice(credentialOf(a), order.id)).toEqual({ invoicePdf: expect.stringContaining(`/my-orders/${order.id}`), hostedInvoiceUrl: expect.stringContaining('/my-orders/') });
    expect(await lemon.invoice(credentialOf(a), '424242')).toBeNull();
  });

  it("maps a subscription's statuses and dates onto the seam's subscription", async () => {
    const a = double.account();
    const variant = double.variant(a.storeId, { subscription: true });
    const renewsAt = Date.parse('2030-01-15T10:00:00Z');
    const { sub } = double.subscription(a.storeId, { variantId: variant, email: 's@example.com', quantity: 4, renewsAt });
    const read = () => lemon.subscription(credentialOf(a), sub.id);
    expect(await read()).toMatchObject({ id: sub.id, customerId: sub.customerId, status: 'active', cancelAtPeriodEnd: false, trialEnd: null, endedAt: null, items: [{ id: sub.itemId, priceId: variant, quantity: 4, currentPeriodEnd: renewsAt }] });
    sub.status = 'on_trial';
    sub.trialEndsAt = '2030-01-10T00:00:00.000000Z';
    expect(await read()).toMatchObject({ status: 'trialing', trialEnd: Date.parse('2030-01-10T00:00:00Z') });
    sub.status = 'past_due';
    expect((await read())!.items[0]).toMatchObject({ currentPeriodStart: renewsAt });
    sub.status = 'cancelled';
    sub.cancelled = true;
    sub.endsAt = '2030-01-15T10:00:00.000000Z';
    expect(await read()).toMatchObject({ status: 'active', cancelAtPeriodEnd: true, items: [{ currentPeriodEnd: renewsAt }] });
    sub.status = 'expired';
    expect(await read()).toMatchObject({ status: 'canceled', cancelAtPeriodEnd: false, endedAt: renewsAt });
    expect(await lemon.subscription(credentialOf(a), '777777')).toBeNull();
  });

  it('checkouts carry the license key as custom data; the portal is the customer\'s pre-signed link', async () => {
    const a = double.account();
    const variant = double.variant(a.storeId);
    const url = await lemon.checkoutUrl(credentialOf(a), { priceId: variant, email: 'c@example.com', metadata: { tessera_license_key: 'KEY-1' }, successUrl: 'https://portal/ok', cancelUrl: 'https://portal/no' });
    expect(url).toMatch(new RegExp(`^https://store-${a.storeId}\\.lemonsqueezy\\.com/checkout/custom/`));
    expect(double.checkouts.at(-1)).toEqual({ storeId: a.storeId, variantId: variant, email: 'c@example.com', custom: { tessera_license_key: 'KEY-1' }, redirectUrl: 'https://portal/ok' });
    const { sub } = double.subscription(a.storeId, { variantId: double.variant(a.storeId, { subscription: true }), email: 'p@example.com' });
    expect(await lemon.billingPortalUrl(credentialOf(a), sub.customerId)).toMatch(/\/billing\?/);
  });

  it("a refunded subscription payment is the subscription's to decide: its state is read again, nothing is reversed", () => {
    const a = double.account();
    const { sub } = double.subscription(a.storeId, { variantId: double.variant(a.storeId, { subscription: true }), email: 'a@example.com' });
    const { body, headers } = double.event('secret', 'subscription_payment_refunded', double.invoiceResource(sub));
    expect(lemon.parse(Buffer.from(body), headers, 'secret')).toMatchObject({ kind: 'subscription', subscriptionId: sub.id });
  });

  it('LEMONSQUEEZY_API_URL must be an http(s) origin', () => {
    const base = { DATA_DIR: mkdtempSync(join(tmpdir(), 'tessera-cfg-')), SECRET_KEY: 'b'.repeat(64) };
    expect(loadConfig({ ...base, LEMONSQUEEZY_API_URL: 'http://127.0.0.1:12112' }).lemonSqueezyApiUrl).toBe('http://127.0.0.1:12112');
    expect(loadConfig(base).lemonSqueezyApiUrl).toBeUndefined();
    for (const bad of ['ftp://ls.test', 'api.lemonsqueezy.com', 'https://api.lemonsqueezy.com/v1/']) expect(() => loadConfig({ ...base, LEMONSQUEEZY_API_URL: bad }), bad).toThrow(/LEMONSQUEEZY_API_URL/);
  });

  it("two tenants' calls in flight at once each go with their own key, and the global fetch and key are left as they were", async () => {
    const tenants = Array.from({ length: 6 }, () => double.account());
    const variants = tenants.map((t) => double.variant(t.storeId));
    const before = globalThis.fetch;
    double.delayMs = 20;
    try {
      // Each variant exists only for its own tenant's key: a call made with another tenant's key would answer false.
      const results = await Promise.all(tenants.flatMap((t, i) => [lemon.priceExists(credentialOf(t), variants[i]!), lemon.priceExists(credentialOf(t), variants[i]!)]));
      expect(results).toEqual(Array(12).fill(true));
    } finally {
      double.delayMs = 0;
    }
    expect(globalThis.fetch).toBe(before);
    for (const [i, t] of tenants.entries()) {
      const seen = double.requests.filter((r) => r.path === `/v1/variants/${variants[i]}`);
      expect(seen.map((r) => r.key)).toEqual([t.apiKey, t.apiKey]);
    }
  });
});

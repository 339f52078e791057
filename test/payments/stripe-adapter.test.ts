import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { AppError } from '../../src/core/errors.ts';
import { StripeProvider } from '../../src/modules/payments/stripe.ts';
import { signedEvent, StripeDouble, stripeObjects } from '../support/stripe-double.ts';

describe('Stripe adapter (provider seam)', () => {
  const double = new StripeDouble();
  let stripe: StripeProvider;
  beforeAll(async () => {
    await double.start();
    stripe = new StripeProvider({ apiUrl: double.url });
  });
  afterAll(() => double.stop());

  it('sends every call to STRIPE_API_URL (host, port, protocol) with the key as Bearer', async () => {
    const key = double.account();
    const price = double.price(key);
    expect(await stripe.priceExists(key, price)).toBe(true);
    expect(await stripe.priceExists(key, 'price_missing')).toBe(false);
    const [call] = double.calls('GET', `/v1/prices/${price}`);
    expect(call!.key).toBe(key);
  });

  it('lists line items through the list envelope, with price and quantity', async () => {
    const key = double.account();
    const [a, b] = [double.price(key), double.price(key)];
    const session = double.session(key, [{ priceId: a, quantity: 3 }, { priceId: b }]);
    expect(await stripe.lineItems(key, session)).toEqual([
      { id: expect.stringMatching(/^li_/), priceId: a, quantity: 3 },
      { id: expect.stringMatching(/^li_/), priceId: b, quantity: 1 },
    ]);
  });

  it('lists line items without touching the stack trace limit of the rest of the process', async () => {
    const key = double.account();
    const session = double.session(key, [{ priceId: double.price(key) }]);
    const limit = Error.stackTraceLimit;
    expect(await stripe.lineItems(key, session)).toHaveLength(1);
    expect(Error.stackTraceLimit).toBe(limit);
    await expect(stripe.lineItems('rk_test_nobodyknowsthis', session)).rejects.toMatchObject({ code: 'invalid_provider_key' });
    expect(Error.stackTraceLimit).toBe(limit);
  });

  it('maps Stripe failures onto the error model', async () => {
    const refused = await stripe.connect('rk_test_nobodyknowsthis', 'https://example.com/hook').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('invalid_provider_key');
    const key = double.account();
    double.fail(502);
    try {
      const down = await stripe.priceExists(key, 'price_x').catch((e: unknown) => e);
      expect((down as AppError).code).toBe('provider_unavailable');
    } finally {
      double.heal();
    }
    const unreachable = new StripeProvider({ apiUrl: 'http://127.0.0.1:1', timeoutMs: 2000 });
    const gone = await unreachable.priceExists(key, 'price_x').catch((e: unknown) => e);
    expect((gone as AppError).code).toBe('provider_unavailable');
  });

  it('parses verified events into provider-neutral facts', () => {
    const secret = 'whsec_adapter_test';
    const now = Date.now();
    const parse = (type: string, object: unknown) => {
      const { payload, header } = signedEvent(secret, type, object);
      return stripe.parse(Buffer.from(payload), { 'stripe-signature': header }, secret, now);
    };
    expect(parse('checkout.session.completed', stripeObjects.checkoutSession({ id: 'cs_1', email: 'a@example.com', paymentIntent: 'pi_1', invoice: 'in_1', amountTotal: 1200 }))).toEqual({
      kind: 'paid',
      sessionId: 'cs_1',
      paymentId: 'pi_1',
      email: 'a@example.com',
      amountTotal: 1200,
      currency: 'usd',
      invoiceId: 'in_1',
      subscriptionId: null,
      licenseKey: null,
    });
    expect(parse('checkout.session.completed', stripeObjects.checkoutSession({ id: 'cs_2', paymentStatus: 'unpaid' })).kind).toBe('ignored');
    expect(parse('checkout.session.async_payment_succeeded', stripeObjects.checkoutSession({ id: 'cs_3' })).kind).toBe('paid');
    expect(parse('charge.refunded', stripeObjects.charge({ paymentIntent: 'pi_1', refunded: true }))).toEqual({ kind: 'reversed', paymentId: 'pi_1', reason: 'refunded' });
    expect(parse('charge.refunded', stripeObjects.charge({ paymentIntent: 'pi_1', refunded: false })).kind).toBe('ignored');
    expect(parse('charge.dispute.created', stripeObjects.dispute({ paymentIntent: 'pi_9' }))).toEqual({ kind: 'reversed', paymentId: 'pi_9', reason: 'disputed' });
    expect(parse('invoice.paid', { id: 'in_1', object: 'invoice' })).toEqual({ kind: 'ignored', type: 'invoice.paid (no subscription)' });
    expect(parse('customer.subscription.updated', { id: 'sub_1', object: 'subscription' })).toMatchObject({ kind: 'subscription', subscriptionId: 'sub_1', eventId: expect.stringMatching(/^evt_/) });
    // The invoice's subscription: parent.subscription_details since 2025-03-31, `subscription` before.
    expect(parse('invoice.paid', stripeObjects.subscriptionInvoice({ subscription: 'sub_2' }))).toMatchObject({ kind: 'subscription', subscriptionId: 'sub_2' });
    expect(parse('invoice.paid', { id: 'in_3', object: 'invoice', subscription: 'sub_3' })).toMatchObject({ kind: 'subscription', subscriptionId: 'sub_3' });
    expect(parse('invoice.payment_failed', stripeObjects.subscriptionInvoice({ subscription: 'sub_4', email: 'late@example.com' }))).toMatchObject({
      kind: 'payment_failed',
      subscriptionId: 'sub_4',
      email: 'late@example.com',
      payUrl: expect.stringMatching(/^https:\/\/invoice\.stripe\.com\//),
    });
    expect(parse('checkout.session.completed', stripeObjects.subscriptionCheckout({ id: 'cs_5', subscription: 'sub_5' }))).toMatchObject({ kind: 'paid', subscriptionId: 'sub_5', paymentId: null });
    // The tolerance is measured against the service's clock, not the machine's.
    const { payload, header } = signedEvent(secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: 'cs_4' }));
    expect(() => stripe.parse(Buffer.from(payload), { 'stripe-signature': header }, secret, now + 301_000)).toThrow(/tolerance/);
  });

  it('retrieves a subscription through the package: items with their periods (ms), status, cancel flag', async () => {
    const key = double.account();
    const price = double.price(key);
    const sub = double.subscription(key, { items: [{ priceId: price, quantity: 2 }], start: 1_800_000_000, periodDays: 30 });
    expect(await stripe.subscription(key, sub.id)).toEqual({
      id: sub.id,
      customerId: sub.customer,
      status: 'active',
      cancelAtPeriodEnd: false,
      trialEnd: null,
      endedAt: null,
      items: [{ id: sub.items[0]!.id, priceId: price, quantity: 2, currentPeriodStart: 1_800_000_000_000, currentPeriodEnd: (1_800_000_000 + 30 * 86_400) * 1000 }],
    });
    expect(await stripe.subscription(key, 'sub_missing')).toBeNull();
    const url = await stripe.billingPortalUrl(key, sub.customer, 'https://licenses.example.com/portal');
    expect(url).toMatch(/^https:\/\/billing\.stripe\.com\/p\/session\//);
    expect(double.calls('POST', '/v1/billing_portal/sessions').at(-1)!.form.get('return_url')).toBe('https://licenses.example.com/portal');
    const denied = double.account({ denied: ['rak_subscription_read'] });
    await expect(stripe.subscription(denied, sub.id)).rejects.toMatchObject({ code: 'invalid_provider_key' });
  });

  it('STRIPE_API_URL must be an http(s) origin', () => {
    const base = { DATA_DIR: mkdtempSync(join(tmpdir(), 'tessera-cfg-')), SECRET_KEY: 'b'.repeat(64) };
    expect(loadConfig({ ...base, STRIPE_API_URL: 'http://127.0.0.1:12111' }).stripeApiUrl).toBe('http://127.0.0.1:12111');
    expect(loadConfig(base).stripeApiUrl).toBeUndefined();
    for (const bad of ['ftp://stripe.test', 'api.stripe.com', 'https://api.stripe.com/v1/']) expect(() => loadConfig({ ...base, STRIPE_API_URL: bad }), bad).toThrow(/STRIPE_API_URL/);
  });
});

import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { PolarProvider, polarCredential } from '../../src/modules/payments/polar.ts';
import { polarSignedEvent } from '../support/polar-double.ts';

const parse = (secret: string, signed: { payload: string; headers: Record<string, string> }, now = Date.now()) => new PolarProvider().parse(Buffer.from(signed.payload), signed.headers, secret, now);

describe('Polar adapter (provider seam)', () => {
  it("verifies Standard Webhooks signatures with Polar's current whsec_ secrets (base64, keyed with the decoded bytes) and its older ones", () => {
    const whsec = `whsec_${randomBytes(24).toString('base64')}`;
    expect(parse(whsec, polarSignedEvent(whsec, 'subscription.updated', { id: 'sub_1' }, { id: 'msg_1' }))).toEqual({ kind: 'subscription', eventId: 'msg_1', subscriptionId: 'sub_1' });
    expect(parse('polar_whs_abc', polarSignedEvent('polar_whs_abc', 'subscription.updated', { id: 'sub_1' }))).toMatchObject({ kind: 'subscription' });
    // The one scheme's key does not pass for the other.
    expect(() => parse(whsec, polarSignedEvent(whsec.slice(6), 'subscription.updated', { id: 'sub_1' }))).toThrow(/does not verify/);
  });

  it('takes any of several signatures (secret rotation), only v1, within 300 s either way of its clock', () => {
    const signed = polarSignedEvent('polar_whs_abc', 'order.refunded', { id: 'o1', status: 'refunded' });
    const rotated = { ...signed, headers: { ...signed.headers, 'webhook-signature': `v1,bm9wZQ== ${signed.headers['webhook-signature']}` } };
    expect(parse('polar_whs_abc', rotated)).toEqual({ kind: 'reversed', paymentId: 'o1', reason: 'refunded' });
    const v2 = { ...signed, headers: { ...signed.headers, 'webhook-signature': signed.headers['webhook-signature']!.replace('v1,', 'v2,') } };
    expect(() => parse('polar_whs_abc', v2)).toThrow(/does not verify/);
    const now = Number(signed.headers['webhook-timestamp']) * 1000;
    expect(() => parse('polar_whs_abc', signed, now + 301_000)).toThrow(/tolerance/);
    expect(() => parse('polar_whs_abc', signed, now - 301_000)).toThrow(/tolerance/);
    expect(parse('polar_whs_abc', signed, now + 299_000)).toMatchObject({ kind: 'reversed' });
  });

  it('parses events into provider-neutral facts', () => {
    const s = 'polar_whs_abc';
    const order = { id: 'o1', total_amount: 900, currency: 'eur', customer: { email: 'a@example.com' }, metadata: {}, subscription_id: null, billing_reason: 'purchase' };
    expect(parse(s, polarSignedEvent(s, 'order.paid', order))).toEqual({ kind: 'paid', sessionId: 'o1', paymentId: 'o1', email: 'a@example.com', amountTotal: 900, currency: 'eur', invoiceId: 'o1', subscriptionId: null, licenseKey: null });
    expect(parse(s, polarSignedEvent(s, 'order.paid', { ...order, metadata: { tessera_license_key: ' K-1 ' } }))).toMatchObject({ licenseKey: 'K-1' });
    expect(parse(s, polarSignedEvent(s, 'order.paid', { ...order, subscription_id: 'sub_1', billing_reason: 'subscription_create' }))).toMatchObject({ kind: 'paid', subscriptionId: 'sub_1', licenseKey: null });
    expect(parse(s, polarSignedEvent(s, 'order.paid', { ...order, subscription_id: 'sub_1', billing_reason: 'subscription_cycle' }, { id: 'm2' }))).toEqual({ kind: 'subscription', eventId: 'm2', subscriptionId: 'sub_1' });
    expect(parse(s, polarSignedEvent(s, 'order.refunded', { id: 'o1', status: 'partially_refunded' }))).toMatchObject({ kind: 'ignored' });
    // A renewal order's refund is the subscription's to decide (its state is read again); the first order's names its purchase.
    expect(parse(s, polarSignedEvent(s, 'order.refunded', { id: 'o2', status: 'refunded', subscription_id: 'sub_1', billing_reason: 'subscription_cycle' }, { id: 'm4' }))).toEqual({ kind: 'subscription', eventId: 'm4', subscriptionId: 'sub_1' });
    expect(parse(s, polarSignedEvent(s, 'order.refunded', { id: 'o1', status: 'refunded', subscription_id: 'sub_1', billing_reason: 'subscription_create' }))).toEqual({ kind: 'reversed', paymentId: 'o1', reason: 'refunded' });
    expect(parse(s, polarSignedEvent(s, 'subscription.past_due', { id: 'sub_1', customer: { email: 'a@example.com' } }, { id: 'm3' }))).toEqual({ kind: 'payment_failed', eventId: 'm3', subscriptionId: 'sub_1', email: 'a@example.com', payUrl: null });
    expect(parse(s, polarSignedEvent(s, 'order.paid', { total_amount: 1 }))).toMatchObject({ kind: 'ignored', malformed: 'id must be a string' });
    expect(parse(s, polarSignedEvent(s, 'benefit.created', { id: 'b' }))).toEqual({ kind: 'ignored', type: 'benefit.created' });
  });

  it('a signed body that is no event (not JSON, no type, no data) is 400 invalid_request', () => {
    const hook = new Webhook('polar_whs_abc', { format: 'raw' });
    for (const payload of ['not json', 'null', '[1]', '{"type":"order.paid"}']) {
      const at = new Date();
      const headers = { 'webhook-id': 'msg_x', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': hook.sign('msg_x', at, payload) };
      expect(() => parse('polar_whs_abc', { payload, headers }), payload).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    }
  });

  it("without POLAR_API_URL a connection's sandbox flag chooses Polar's server; a refused token is invalid_provider_key", async () => {
    const seen: string[] = [];
    const spy = vi.spyOn(globalThis, 'fetch').mockImplementation(async (input) => {
      seen.push(input instanceof Request ? input.url : String(input));
      return new Response(JSON.stringify({ error: 'invalid_token', error_description: 'no' }), { status: 401, headers: { 'content-type': 'application/json' } });
    });
    try {
      const provider = new PolarProvider();
      for (const sandbox of [true, false]) {
        const credential = polarCredential({ accessToken: 'polar_oat_x', organizationId: '0f8b1c9e-0000-4000-8000-000000000000', sandbox });
        await expect(provider.connect(credential, 'https://tessera.example/hook')).rejects.toMatchObject({ code: 'invalid_provider_key' });
      }
    } finally {
      spy.mockRestore();
    }
    expect(seen).toEqual([
      'https://sandbox-api.polar.sh/v1/organizations/0f8b1c9e-0000-4000-8000-000000000000',
      'https://api.polar.sh/v1/organizations/0f8b1c9e-0000-4000-8000-000000000000',
    ]);
  });

  it('POLAR_API_URL must be an http(s) origin', () => {
    expect(loadConfig({ POLAR_API_URL: 'http://127.0.0.1:9999' }).polarApiUrl).toBe('http://127.0.0.1:9999');
    expect(() => loadConfig({ POLAR_API_URL: 'ftp://x' })).toThrow(/POLAR_API_URL/);
  });
});

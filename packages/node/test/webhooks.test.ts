import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureHeader } from '../../../src/modules/webhooks/payload.ts';
import { verifyWebhook, WebhookVerificationError } from '../src/index.ts';

const secret = 'whsec_0123456789abcdefghijABCDEFGHIJ01';
const body = JSON.stringify({ id: 'evt_1', type: 'license.created', createdAt: '2026-01-01T00:00:00.000Z', data: { license: { key: 'K' } } });
const now = 1_800_000_000_000;
const t = now / 1000;

function refusal(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('expected a WebhookVerificationError');
}

describe('verifyWebhook', () => {
  it("accepts the server's signature over the raw body, as a string or as bytes, and returns the event", () => {
    const header = signatureHeader(secret, body, t);
    expect(verifyWebhook(body, header, secret, { now })).toEqual(JSON.parse(body));
    expect(verifyWebhook(new TextEncoder().encode(body), header, secret, { now }).id).toBe('evt_1');
    expect(verifyWebhook(Buffer.from(body), [header], secret, { now }).type).toBe('license.created');
  });

  it('is the documented HMAC: hex SHA-256 of "<t>.<body>" keyed with the whole whsec_ string', () => {
    const mac = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    expect(signatureHeader(secret, body, t)).toBe(`t=${t},v1=${mac}`);
    expect(verifyWebhook(body, `t=${t}, v1=${mac}`, secret, { now }).id).toBe('evt_1');
  });

  it('refuses another secret, an altered body or an altered timestamp', () => {
    const header = signatureHeader(secret, body, t);
    expect(refusal(() => verifyWebhook(body, header, 'whsec_other', { now })).code).toBe('signature_mismatch');
    expect(refusal(() => verifyWebhook(body.replace('evt_1', 'evt_2'), header, secret, { now })).code).toBe('signature_mismatch');
    expect(refusal(() => verifyWebhook(body, header.replace(`t=${t}`, `t=${t + 1}`), secret, { now })).code).toBe('signature_mismatch');
    // Keyed with the secret exactly as shown: without its prefix it is another key.
    expect(refusal(() => verifyWebhook(body, header, secret.slice('whsec_'.length), { now })).code).toBe('signature_mismatch');
  });

  it('refuses a signature older (or newer) than the tolerance', () => {
    const old = signatureHeader(secret, body, t - 301);
    expect(refusal(() => verifyWebhook(body, old, secret, { now })).code).toBe('signature_expired');
    expect(verifyWebhook(body, old, secret, { now, toleranceSeconds: 600 }).id).toBe('evt_1');
    expect(refusal(() => verifyWebhook(body, signatureHeader(secret, body, t + 301), secret, { now })).code).toBe('signature_expired');
  });

  it('checks the signature before the age: an old forged request says mismatch, not expired', () => {
    expect(refusal(() => verifyWebhook(body, signatureHeader('whsec_forged', body, t - 10_000), secret, { now })).code).toBe('signature_mismatch');
  });

  it('accepts any one matching v1 among several', () => {
    const good = signatureHeader(secret, body, t).split(',')[1]!;
    expect(verifyWebhook(body, `t=${t},v1=${'0'.repeat(64)},${good}`, secret, { now }).id).toBe('evt_1');
  });

  it.each([
    [undefined, 'missing_signature'],
    ['', 'missing_signature'],
    ['v1=abc', 'malformed_signature'],
    [`t=${t}`, 'malformed_signature'],
    ['t=soon,v1=abc', 'malformed_signature'],
    [`t=${t},v1=not-hex`, 'signature_mismatch'],
    [`t=${t},v1=abcd`, 'signature_mismatch'],
  ])('refuses the header %s', (header, code) => {
    expect(refusal(() => verifyWebhook(body, header, secret, { now })).code).toBe(code);
  });
});

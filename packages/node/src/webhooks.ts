import { createHmac, timingSafeEqual } from 'node:crypto';

export interface VerifyWebhookOptions {
  /** How old (or how far in the future) a signature may be, in seconds; default 300. */
  toleranceSeconds?: number;
  /** The current time in epoch milliseconds (tests); default Date.now(). */
  now?: number;
}

/** Why a webhook was refused: `code` says which check failed. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly code: 'missing_signature' | 'malformed_signature' | 'signature_mismatch' | 'signature_expired',
    message: string,
  ) {
    super(message);
  }
}

/** A delivery's body as Tessera sends it. */
export interface WebhookEvent<T extends string = string> {
  id: string;
  type: T;
  createdAt: string;
  data: Record<string, unknown>;
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * Checks a webhook delivery from Tessera and returns its parsed body; throws
 * WebhookVerificationError otherwise. `rawBody` must be the request body exactly as received
 * (bytes or string, before any JSON parsing), `signatureHeader` the `Tessera-Signature` header,
 * `secret` the endpoint's `whsec_...` secret. The signature is compared in constant time, and a
 * signature older than `toleranceSeconds` is refused (a captured request cannot be replayed later).
 */
export function verifyWebhook<T extends string = string>(
  rawBody: string | Uint8Array,
  signatureHeader: string | string[] | null | undefined,
  secret: string,
  options: VerifyWebhookOptions = {},
): WebhookEvent<T> {
  const header = Array.isArray(signatureHeader) ? signatureHeader[0] : signatureHeader;
  if (!header) throw new WebhookVerificationError('missing_signature', 'No Tessera-Signature header.');
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1') signatures.push(value);
  }
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || signatures.length === 0) {
    throw new WebhookVerificationError('malformed_signature', 'Tessera-Signature must be t=<unix seconds>,v1=<hex>.');
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
  const matches = signatures.some((s) => HEX64.test(s) && timingSafeEqual(Buffer.from(s, 'hex'), expected));
  if (!matches) throw new WebhookVerificationError('signature_mismatch', 'The signature does not match this body and secret.');
  const tolerance = options.toleranceSeconds ?? 300;
  const age = (options.now ?? Date.now()) / 1000 - Number(timestamp);
  if (Math.abs(age) > tolerance) throw new WebhookVerificationError('signature_expired', `The signature is ${Math.round(age)} s old; at most ${tolerance} s is accepted.`);
  return JSON.parse(body.toString('utf8')) as WebhookEvent<T>;
}

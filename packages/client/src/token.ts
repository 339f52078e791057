/** The payload of a Tessera license token (times in unix seconds). */
export interface TokenClaims {
  status: 'active' | 'fallbacked';
  license: {
    key: string;
    productId: string;
    type: 'perpetual' | 'timed';
    expiresAt: number | null;
    createdAt: number;
    maxDevices: number;
    email: string | null;
    /** The features the license unlocks (absent in tokens of servers before wave 3). */
    entitlements?: string[];
  };
  device: { identifier: string; name: string; activationDate: number };
  iat: number;
  exp: number;
}

/** A product's verification key as the service publishes it. */
export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  alg?: 'ES256';
  x: string;
  y: string;
  kid: string;
}

export type TokenFailure =
  /** Not a JWT, or not one of ours (wrong algorithm, missing claims). */
  | 'malformed'
  /** Signed by a key the app does not hold (a rotated key the app was not given yet). */
  | 'unknown_key'
  | 'bad_signature'
  | 'product_mismatch'
  | 'device_mismatch'
  /** The license itself expired (and was not in fallback when the token was issued). */
  | 'license_expired'
  /** The token's `exp` passed; everything else about it checks out. */
  | 'token_expired'
  /** Nothing could be checked: no WebCrypto in this runtime (Node 18 without `options.crypto`). */
  | 'no_webcrypto';

export type TokenVerification =
  | {
      valid: true;
      status: TokenClaims['status'];
      /** A fallbacked license: valid, with the limited access the app grants after expiry. */
      limited: boolean;
      claims: TokenClaims;
    }
  | {
      valid: false;
      code: TokenFailure;
      message: string;
      /** Present once the signature has checked out (so the claims are genuine). */
      claims?: TokenClaims;
    };

/** A key as WebCrypto's importKey returns it; the SDK only hands it back to verify. */
export type VerifyingKey = object;

/**
 * The part of WebCrypto the SDK uses (ES256 verification), written out rather than taken from the
 * DOM's `SubtleCrypto`, so the declarations need no DOM typings (a Node or Electron-main project
 * without `lib: ["DOM"]` compiles them). `crypto.subtle` of browsers, Electron and Node 19+ fits, and
 * so does Node 18's `(await import('node:crypto')).webcrypto.subtle`.
 */
export interface VerifyingSubtleCrypto {
  importKey(
    format: 'jwk',
    keyData: { kty: string; crv: string; x: string; y: string },
    algorithm: { name: 'ECDSA'; namedCurve: 'P-256' },
    extractable: boolean,
    keyUsages: readonly 'verify'[],
  ): Promise<VerifyingKey>;
  verify(algorithm: { name: 'ECDSA'; hash: 'SHA-256' }, key: VerifyingKey, signature: ArrayBuffer | ArrayBufferView, data: ArrayBuffer | ArrayBufferView): Promise<boolean>;
}

export interface VerifyOptions {
  keys: readonly PublicJwk[];
  productIds: readonly string[];
  deviceIdentifier: string;
  now: number;
  subtle: VerifyingSubtleCrypto;
}

const ES256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const keyCache = new WeakMap<PublicJwk, Promise<VerifyingKey>>();

function base64UrlToBytes(text: string): Uint8Array<ArrayBuffer> {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error('not base64url');
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const decodeJson = (part: string): unknown => JSON.parse(new TextDecoder().decode(base64UrlToBytes(part)));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function looksLikeClaims(v: unknown): v is TokenClaims {
  if (!isObject(v) || !isObject(v.license) || !isObject(v.device)) return false;
  const { license, device } = v;
  return (
    typeof v.exp === 'number' &&
    typeof v.iat === 'number' &&
    typeof v.status === 'string' &&
    typeof license.key === 'string' &&
    typeof license.productId === 'string' &&
    (license.expiresAt === null || typeof license.expiresAt === 'number') &&
    typeof device.identifier === 'string'
  );
}

/** The claims without any check: only for deciding what to ask the server, never for trust. */
export function decodeClaims(token: string): TokenClaims | undefined {
  try {
    const payload = decodeJson(token.split('.')[1] ?? '');
    return looksLikeClaims(payload) ? payload : undefined;
  } catch {
    return undefined;
  }
}

function importKey(jwk: PublicJwk, subtle: VerifyingSubtleCrypto): Promise<VerifyingKey> {
  let key = keyCache.get(jwk);
  if (!key) {
    key = subtle.importKey('jwk', { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, ES256, false, ['verify']);
    keyCache.set(jwk, key);
  }
  return key;
}

const fail = (code: TokenFailure, message: string, claims?: TokenClaims): TokenVerification => ({ valid: false, code, message, ...(claims ? { claims } : {}) });

/**
 * Offline verification, in the order of the spec's client rules: the ES256 signature with the
 * product's public key, then product and device, then the license's own expiry, then `exp`
 * last, so that `token_expired` means "genuine and once valid here".
 */
export async function verifyLicenseToken(token: string, o: VerifyOptions): Promise<TokenVerification> {
  const parts = token.split('.');
  if (parts.length !== 3) return fail('malformed', 'A license token has three parts.');
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  let header: unknown;
  let claims: unknown;
  let signature: Uint8Array<ArrayBuffer>;
  try {
    header = decodeJson(headerPart);
    claims = decodeJson(payloadPart);
    signature = base64UrlToBytes(signaturePart);
  } catch {
    return fail('malformed', 'The token is not valid base64url JSON.');
  }
  if (!isObject(header) || header.alg !== 'ES256') return fail('malformed', 'Only ES256 tokens are accepted.');
  if (!looksLikeClaims(claims)) return fail('malformed', 'The token does not carry license claims.');
  const kid = header.kid;
  const jwk = o.keys.find((k) => k.kid === kid) ?? (o.keys.length === 1 && kid === undefined ? o.keys[0] : undefined);
  if (!jwk) return fail('unknown_key', `The token was signed with key "${String(kid)}", which this app does not hold.`);
  let genuine = false;
  try {
    const data = new TextEncoder().encode(`${headerPart}.${payloadPart}`);
    genuine = signature.length === 64 && (await o.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, await importKey(jwk, o.subtle), signature, data));
  } catch {
    genuine = false;
  }
  if (!genuine) return fail('bad_signature', 'The token signature does not verify.');

  const nowSeconds = Math.floor(o.now / 1000);
  if (!o.productIds.includes(claims.license.productId)) return fail('product_mismatch', 'The token is for another product.', claims);
  if (claims.device.identifier !== o.deviceIdentifier) return fail('device_mismatch', 'The token is for another device.', claims);
  const licenseExpired = claims.license.expiresAt !== null && claims.license.expiresAt <= nowSeconds;
  if (licenseExpired && claims.status !== 'fallbacked') return fail('license_expired', 'The license has expired.', claims);
  if (claims.exp <= nowSeconds) return fail('token_expired', 'The token has expired; refresh it online.', claims);
  return { valid: true, status: claims.status, limited: claims.status === 'fallbacked', claims };
}

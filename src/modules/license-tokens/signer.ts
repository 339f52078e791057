import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import type { LicenseStatus } from '../../core/license-status.ts';
import type { Device, LicenseRecord } from '../licenses/types.ts';

/** The payload of a license token, exactly as decisions.md fixes it (times in unix seconds). */
export interface TokenClaims {
  status: LicenseStatus;
  license: {
    key: string;
    productId: string;
    type: LicenseRecord['type'];
    expiresAt: number | null;
    createdAt: number;
    maxDevices: number;
    email: string | null;
    /** Additive (wave 3): the features the license unlocks. */
    entitlements: string[];
  };
  device: { identifier: string; name: string; activationDate: number };
  iat: number;
  exp: number;
}

export interface TokenSubject {
  status: LicenseStatus;
  license: LicenseRecord;
  device: Device;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

/** Bytes of each of r and s in a P-256 signature. */
const P256_HALF = 32;

/**
 * A DER ECDSA signature (SEQUENCE of two INTEGERs) as JWS wants it: r and s, 32 bytes each, left-padded.
 * node:crypto converts to this itself (`dsaEncoding: 'ieee-p1363'`), but on Node 24 that doubles the
 * signature's cost (36-39 µs against 18 for DER, OpenSSL 3.5.8; the same 18 on Node 20 and 22).
 */
export function derToJose(der: Buffer): Buffer {
  const out = Buffer.alloc(2 * P256_HALF);
  // SEQUENCE, its length (under 128 for P-256: one byte), then the INTEGERs r and s.
  if (der[0] !== 0x30 || der[1] !== der.length - 2) throw new Error('not a DER ECDSA signature');
  let at = 2;
  for (let half = 0; half < 2; half++) {
    const length = der[at + 1]!;
    if (der[at] !== 0x02 || length === 0 || at + 2 + length > der.length) throw new Error('not a DER ECDSA signature');
    let start = at + 2;
    let size = length;
    // A leading zero keeps a high-bit integer positive in DER; it is no part of the value.
    while (size > P256_HALF && der[start] === 0) {
      start++;
      size--;
    }
    if (size > P256_HALF) throw new Error('not a P-256 signature');
    der.copy(out, half * P256_HALF + P256_HALF - size, start, start + size);
    at += 2 + length;
  }
  if (at !== der.length) throw new Error('not a DER ECDSA signature');
  return out;
}

/**
 * Signs ES256 JWTs with one product's key. Built once per key (the PEM is parsed and the header
 * encoded here), so signing a token costs one JSON.stringify and one ECDSA signature: jose's
 * SignJWT would re-validate and re-encode everything per call at about a third of the speed.
 */
export class TokenSigner {
  private readonly key: KeyObject;
  private readonly encodedHeader: string;

  constructor(
    privateKeyPem: string,
    readonly keyId: string,
    readonly validitySeconds: number,
  ) {
    this.key = createPrivateKey(privateKeyPem);
    this.encodedHeader = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid: keyId })).toString('base64url');
  }

  sign({ status, license, device }: TokenSubject, now: number): string {
    const iat = seconds(now);
    const claims: TokenClaims = {
      status,
      license: {
        key: license.key,
        productId: license.productId,
        type: license.type,
        expiresAt: license.expiresAt === null ? null : seconds(license.expiresAt),
        createdAt: seconds(license.createdAt),
        maxDevices: license.maxDevices,
        email: license.email,
        entitlements: license.entitlements,
      },
      device: { identifier: device.identifier, name: device.name, activationDate: seconds(device.activationDate) },
      iat,
      // On a floating product a token lasts no longer than the lease it was issued under.
      exp: device.leaseExpiresAt == null ? iat + this.validitySeconds : Math.min(iat + this.validitySeconds, seconds(device.leaseExpiresAt)),
    };
    const input = `${this.encodedHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    // The signing input is base64url text (ASCII): latin1 copies it byte for byte, with no UTF-8 encoding.
    // JWS wants the raw r||s signature (IEEE P1363): signed as DER, converted here (derToJose).
    const signature = derToJose(sign('sha256', Buffer.from(input, 'latin1'), this.key));
    return `${input}.${signature.toString('base64url')}`;
  }
}

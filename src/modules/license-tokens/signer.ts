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

/**
 * Signs ES256 JWTs with one product's key. Built once per key (the PEM is parsed and the header
 * encoded here), so signing a token costs one JSON.stringify and one ECDSA signature: jose's
 * SignJWT would re-validate and re-encode everything per call at about a third of the speed.
 */
export class TokenSigner {
  /** The key and its signature format, as node:crypto's sign takes them: one object for every token. */
  private readonly signKey: { key: KeyObject; dsaEncoding: 'ieee-p1363' };
  private readonly encodedHeader: string;

  constructor(
    privateKeyPem: string,
    readonly keyId: string,
    readonly validitySeconds: number,
  ) {
    // JWS wants the raw r||s signature (IEEE P1363), not DER.
    this.signKey = { key: createPrivateKey(privateKeyPem), dsaEncoding: 'ieee-p1363' };
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
      },
      device: { identifier: device.identifier, name: device.name, activationDate: seconds(device.activationDate) },
      iat,
      exp: iat + this.validitySeconds,
    };
    const input = `${this.encodedHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    // The signing input is base64url text (ASCII): latin1 copies it byte for byte, with no UTF-8 encoding.
    const signature = sign('sha256', Buffer.from(input, 'latin1'), this.signKey);
    return `${input}.${signature.toString('base64url')}`;
  }
}

import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { importSPKI, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { derToJose, TokenSigner } from '../../src/modules/license-tokens/signer.ts';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

describe('ES256 signatures as JWS wants them', () => {
  it('turns DER signatures into r||s that verify, whatever the lengths of r and s', () => {
    const lengths = new Set<number>();
    for (let i = 0; i < 3000; i++) {
      const data = Buffer.from(`message ${i}`);
      const der = sign('sha256', data, privateKey);
      lengths.add(der[3]!).add(der[5 + der[3]!]!);
      const jose = derToJose(der);
      expect(jose.length).toBe(64);
      expect(verify('sha256', data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, jose)).toBe(true);
    }
    // r and s of 33 bytes (a leading zero) and of 32 are both common; 31 or fewer bytes (left-padded) comes about once in 128.
    expect(lengths.has(33) && lengths.has(32)).toBe(true);
    expect([...lengths].some((n) => n < 32)).toBe(true);
  });

  it('refuses what is not a DER ECDSA signature', () => {
    const der = sign('sha256', Buffer.from('x'), privateKey);
    expect(() => derToJose(Buffer.alloc(64))).toThrow();
    expect(() => derToJose(der.subarray(0, der.length - 1))).toThrow();
    expect(() => derToJose(Buffer.concat([der, Buffer.from([0])]))).toThrow();
  });

  it('signs tokens that jose verifies', async () => {
    const signer = new TokenSigner(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 'kid-1', 3600);
    const now = Date.now();
    const license = { key: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', productId: 'p_1', type: 'perpetual', expiresAt: null, createdAt: now, maxDevices: 3, email: null };
    const key = await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }) as string, 'ES256');
    for (let i = 0; i < 200; i++) {
      const token = signer.sign({ status: 'active', license, device: { identifier: `d-${i}`, name: 'Laptop', activationDate: now } } as never, now);
      const { payload, protectedHeader } = await jwtVerify(token, key);
      expect(protectedHeader).toEqual({ alg: 'ES256', typ: 'JWT', kid: 'kid-1' });
      expect((payload as { device: { identifier: string } }).device.identifier).toBe(`d-${i}`);
    }
  });
});

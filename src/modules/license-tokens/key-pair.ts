import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { invalidRequest } from '../../core/errors.ts';

/** The public half as published: a P-256 JWK with its key id. */
export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  alg: 'ES256';
  x: string;
  y: string;
  kid: string;
}

/** A P-256 key pair as the service keeps it: PKCS#8 private PEM (sealed before storage), SPKI public PEM, kid. */
export interface KeyPairMaterial {
  privateKeyPem: string;
  publicKeyPem: string;
  keyId: string;
}

/** Imports are bounded by the route schema; this is the PEM label the service accepts. */
const PKCS8_LABEL = /^-----BEGIN PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PRIVATE KEY-----\s*$/;

/** RFC 7638 thumbprint of the public key: stable, so a copied or re-imported key keeps its kid. */
function thumbprint(jwk: { crv: string; kty: string; x: string; y: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}

function fromPrivateKey(privateKey: KeyObject): KeyPairMaterial {
  const publicKey = createPublicKey(privateKey);
  const jwk = publicKey.export({ format: 'jwk' }) as { crv: string; kty: string; x: string; y: string };
  return {
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }) as string,
    keyId: thumbprint(jwk),
  };
}

export function generateKeyPair(): KeyPairMaterial {
  return fromPrivateKey(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
}

/** An operator's own key: unencrypted PKCS#8 PEM of a P-256 key, anything else a 400 that says why. */
export function importPrivateKeyPem(pem: string): KeyPairMaterial {
  const text = pem.trim();
  if (!PKCS8_LABEL.test(text)) {
    throw invalidRequest(
      'privateKeyPem',
      'must be an unencrypted PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"); convert with `openssl pkcs8 -topk8 -nocrypt -in key.pem`',
    );
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch {
    throw invalidRequest('privateKeyPem', 'is not a readable private key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    const found = key.asymmetricKeyType === 'ec' ? `EC ${key.asymmetricKeyDetails?.namedCurve}` : key.asymmetricKeyType;
    throw invalidRequest('privateKeyPem', `must be an EC P-256 key for ES256, got ${found}`);
  }
  return fromPrivateKey(key);
}

export function publicJwk(publicKeyPem: string, keyId: string): PublicJwk {
  const { x, y } = createPublicKey(publicKeyPem).export({ format: 'jwk' }) as { x: string; y: string };
  return { kty: 'EC', crv: 'P-256', alg: 'ES256', x, y, kid: keyId };
}

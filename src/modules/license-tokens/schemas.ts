import { Type } from 'typebox';
import { Nullable } from '../../http/schema-helpers.ts';
import { ValidStatus } from '../licenses/schemas.ts';
import { PublicLicenseQuery } from '../public/schemas.ts';
import { VALIDITY_DEFAULT, VALIDITY_MAX, VALIDITY_MIN } from './service.ts';

export const PublicJwkBody = Type.Object(
  {
    kty: Type.String({ enum: ['EC'] }),
    crv: Type.String({ enum: ['P-256'] }),
    alg: Type.String({ enum: ['ES256'] }),
    x: Type.String(),
    y: Type.String(),
    kid: Type.String({ description: 'RFC 7638 thumbprint of the key; also the `kid` header of every token it signs.' }),
  },
  { description: 'The ES256 verification key as a JWK.' },
);

export const TokenConfigBody = Type.Object({
  enabled: Type.Boolean(),
  validitySeconds: Type.Integer(),
  exposePublicKey: Type.Boolean({ description: 'Whether the public key is served on the public API.' }),
  keyId: Nullable(Type.String()),
  publicKeyJwk: Nullable(PublicJwkBody),
  publicKeyPem: Nullable(Type.String({ description: 'SPKI PEM.' })),
});

export const UpdateTokenConfigBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'Enabling the first time generates a P-256 key pair.' })),
    // No `default` keywords: Fastify's validator would fill them in and a PUT of one field would reset the others.
    validitySeconds: Type.Optional(Type.Integer({ minimum: VALIDITY_MIN, maximum: VALIDITY_MAX, description: `Token lifetime; ${VALIDITY_DEFAULT} (7 days) until set.` })),
    exposePublicKey: Type.Optional(Type.Boolean({ description: 'Serve the public key on the public API; true until set.' })),
  },
  { additionalProperties: false },
);

export const KeyPairBody = Type.Object(
  {
    copyFromProductId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "Another of the account's products." })),
    privateKeyPem: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: 'Unencrypted PKCS#8 PEM of a P-256 key.' })),
  },
  {
    // Rejected rather than stripped (the API's default): `{}` means "new pair", so a misspelt
    // field must not silently rotate the key.
    additionalProperties: Type.Never(),
    description: '{} for a new pair, or exactly one of copyFromProductId and privateKeyPem.',
  },
);

export const TokenRequestBody = PublicLicenseQuery;

export const TokenResult = Type.Object({ isValid: Type.Boolean(), status: ValidStatus, token: Type.String({ description: 'ES256 JWT.' }) });

export const PublicKeyResult = Type.Object({ jwk: PublicJwkBody });

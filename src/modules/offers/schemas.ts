import { Type } from 'typebox';
import { toIso } from '../../core/time.ts';
import { Nullable, StringEnum, Timestamp } from '../../http/schema-helpers.ts';
import { EntitlementsInput } from '../products/schemas.ts';
import type { Offer } from './types.ts';

export const CreateOfferBody = Type.Object(
  {
    kind: StringEnum(['renewal', 'upgrade']),
    name: Type.String({ minLength: 1, maxLength: 200, description: 'What the customer sees in the portal.' }),
    priceId: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_-]+$', description: 'The price the customer pays: a Stripe price_..., a Lemon Squeezy variant id with provider lemonsqueezy, or a Polar product id with provider polar.' }),
    provider: Type.Optional(StringEnum(['stripe', 'lemonsqueezy', 'polar'], { description: 'Whose checkout sells it: stripe (default), lemonsqueezy or polar.' })),
    extendDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 36500, description: 'Renewal: expiresAt becomes the later of now and the expiry, plus this many days.' })),
    productId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Upgrade: another product of the account; the license moves there, keeping key and devices.' })),
    maxDevices: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: "Upgrade: the license's new maxDevices." })),
    licenseType: Type.Optional(StringEnum(['perpetual'], { description: 'Upgrade: perpetual clears the expiry.' })),
    entitlements: Type.Optional(EntitlementsInput),
  },
  { additionalProperties: false },
);

export const OfferReply = Type.Object({
  id: Type.String({ description: 'Starts with off_.' }),
  productId: Type.String(),
  kind: Type.String({ enum: ['renewal', 'upgrade'] }),
  name: Type.String(),
  provider: Type.String({ description: 'Whose checkout sells it: stripe or polar.' }),
  priceId: Type.String(),
  extendDays: Nullable(Type.Integer()),
  upgrade: Nullable(
    Type.Object({
      productId: Nullable(Type.String()),
      maxDevices: Nullable(Type.Integer()),
      licenseType: Nullable(Type.String()),
      entitlements: Nullable(Type.Array(Type.String(), { description: "The license's entitlements after the upgrade; null: it keeps its own." })),
    }),
  ),
  createdAt: Timestamp,
});

export const offerView = (o: Offer) => ({
  id: o.id,
  productId: o.productId,
  kind: o.kind,
  name: o.name,
  provider: o.provider,
  priceId: o.priceId,
  extendDays: o.extendDays,
  upgrade: o.kind === 'upgrade' ? { productId: o.targetProductId, maxDevices: o.maxDevices, licenseType: o.licenseType, entitlements: o.entitlements } : null,
  createdAt: toIso(o.createdAt),
});

export const OfferParams = Type.Object({ productId: Type.String({ minLength: 1, maxLength: 64 }), offerId: Type.String({ minLength: 1, maxLength: 64 }) });

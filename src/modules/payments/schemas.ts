import { Type } from 'typebox';
import type { PurchaseSnapshot } from '../../core/events.ts';
import { toIso, toIsoOrNull } from '../../core/time.ts';
import { Nullable, StringEnum, Timestamp } from '../../http/schema-helpers.ts';
import { EntitlementsInput } from '../products/schemas.ts';
import { PURCHASE_LIMIT_MAX, purchaseSnapshot } from './service.ts';
import type { Connection, PriceMapping, Purchase } from './types.ts';

export const ConnectStripeBody = Type.Object(
  {
    restrictedKey: Type.String({
      minLength: 8,
      maxLength: 255,
      pattern: '^(rk|sk)_[A-Za-z0-9_]+$',
      description: 'A restricted key rk_... with the permissions in docs/payments.md (a secret key sk_... is accepted too).',
    }),
  },
  { additionalProperties: false },
);

export const ConnectionReply = Type.Object(
  {
    connected: Type.Boolean(),
    livemode: Type.Optional(Type.Boolean()),
    webhookEndpointId: Type.Optional(Type.String({ description: "The endpoint at the provider (Stripe: we_...; Polar: a UUID)." })),
    connectedAt: Type.Optional(Timestamp),
  },
  { description: 'The connection; `{"connected": false}` when there is none. Never the key.' },
);

export const connectionView = (c: Connection | undefined) =>
  c ? { connected: true, livemode: c.livemode, webhookEndpointId: c.webhookEndpointId, connectedAt: toIso(c.connectedAt) } : { connected: false };

export const PriceId = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_-]+$', description: 'A Stripe price id, price_..., a Lemon Squeezy variant id (digits), or a Polar product id (a UUID).' });

export const CreateMappingBody = Type.Object(
  {
    provider: Type.Optional(StringEnum(['stripe', 'lemonsqueezy', 'polar'], { description: 'Where the price is sold: stripe (default), lemonsqueezy (priceId is a variant id) or polar (priceId is a Polar product id).' })),
    priceId: PriceId,
    maxDevices: Type.Integer({ minimum: 1, maximum: 100000, description: 'Per unit bought: a license gets this × the quantity (at most 100000).' }),
    licenseType: Type.String({ enum: ['perpetual', 'timed'] }),
    offsetDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 36500, description: 'Timed: expiry = creation + this many days.' })),
    fixedExpiresAt: Type.Optional(Type.String({ maxLength: 64, description: 'Timed: the same expiry for every license (ISO 8601 date-time or YYYY-MM-DD).' })),
    billing: Type.Optional(StringEnum(['one_time', 'subscription'], { description: 'one_time (default) or subscription: the license follows the subscription (licenseType timed, no offsetDays or fixedExpiresAt).' })),
    graceDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 60, description: 'Subscription: days a license keeps working after an unpaid period end (default 7).' })),
    entitlements: Type.Optional(EntitlementsInput),
  },
  { additionalProperties: false },
);

export const PriceMappingReply = Type.Object({
  provider: Type.String({ description: 'stripe, lemonsqueezy or polar.' }),
  priceId: Type.String(),
  productId: Type.String(),
  maxDevices: Type.Integer(),
  licenseType: Type.String({ enum: ['perpetual', 'timed'] }),
  offsetDays: Nullable(Type.Integer()),
  fixedExpiresAt: Nullable(Timestamp),
  billing: Type.String({ enum: ['one_time', 'subscription'] }),
  graceDays: Nullable(Type.Integer()),
  entitlements: Nullable(Type.Array(Type.String(), { description: "What this price's licenses unlock; null: the product's default entitlements." })),
  createdAt: Timestamp,
});

export const mappingView = (m: PriceMapping) => ({
  provider: m.provider,
  priceId: m.priceId,
  productId: m.productId,
  maxDevices: m.maxDevices,
  licenseType: m.licenseType,
  offsetDays: m.offsetDays,
  fixedExpiresAt: toIsoOrNull(m.fixedExpiresAt),
  billing: m.billing,
  graceDays: m.graceDays,
  entitlements: m.entitlements,
  createdAt: toIso(m.createdAt),
});

export const MappingParams = Type.Object({ productId: Type.String({ minLength: 1, maxLength: 64 }), priceId: PriceId });

export const PurchaseReply = Type.Object({
  id: Type.String({ description: 'Starts with pur_.' }),
  provider: Type.String(),
  sessionId: Type.String(),
  email: Nullable(Type.String()),
  amountTotal: Nullable(Type.Integer({ description: "In the currency's smallest unit (cents)." })),
  currency: Nullable(Type.String()),
  status: Type.String({ enum: ['fulfilled', 'unmapped', 'unmatched', 'refunded', 'disputed'] }),
  kind: Type.String({ enum: ['new', 'renewal', 'upgrade', 'subscription'] }),
  licenseKeys: Type.Array(Type.String()),
  hasInvoice: Type.Boolean(),
  createdAt: Timestamp,
});

/** A purchase on the wire (the purchases API and webhook bodies), from an event's snapshot. */
export const purchaseSnapshotView = (p: PurchaseSnapshot) => ({
  id: p.id,
  provider: p.provider,
  sessionId: p.sessionId,
  email: p.email,
  amountTotal: p.amountTotal,
  currency: p.currency,
  status: p.status,
  kind: p.kind,
  licenseKeys: p.licenseKeys,
  hasInvoice: p.hasInvoice,
  createdAt: toIso(p.createdAt),
});

export const purchaseView = (p: Purchase) => purchaseSnapshotView(purchaseSnapshot(p));

export const PurchaseListQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: `1 to ${PURCHASE_LIMIT_MAX}, default 50.` })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

export const PurchasePageReply = Type.Object({ data: Type.Array(PurchaseReply), nextCursor: Nullable(Type.String()) });

export const PurchaseParams = Type.Object({ purchaseId: Type.String({ minLength: 1, maxLength: 64 }) });

export const InvoiceReply = Type.Object({
  invoicePdf: Type.String({ description: "Stripe's link to the PDF (it expires: fetch it when needed)." }),
  hostedInvoiceUrl: Nullable(Type.String()),
});

export const WebhookParams = Type.Object({ connectionId: Type.String({ minLength: 1, maxLength: 64 }) });

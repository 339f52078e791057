import { Type } from 'typebox';
import { toIso } from '../../core/time.ts';
import { Email, Nullable, Timestamp } from '../../http/schema-helpers.ts';
import { ENTITLEMENT_PATTERN, ENTITLEMENTS_MAX } from '../../core/entitlements.ts';
import { LEASE_SECONDS_DEFAULT, LEASE_SECONDS_MAX, LEASE_SECONDS_MIN, type Product } from './service.ts';

/** A set of entitlement codes as requests send it (decisions.md, "Licensing model"). */
export const EntitlementsInput = Type.Array(Type.String({ pattern: ENTITLEMENT_PATTERN, maxLength: 64 }), {
  maxItems: ENTITLEMENTS_MAX,
  description: `Feature codes matching ${ENTITLEMENT_PATTERN}, at most ${ENTITLEMENTS_MAX}; repeats are dropped.`,
});

const TrialBody = Type.Object({
  enabled: Type.Boolean(),
  days: Type.Integer({ description: "A trial license's length." }),
  maxDevices: Type.Integer({ description: "A trial license's devices." }),
});

const FloatingBody = Type.Object({
  enabled: Type.Boolean(),
  leaseSeconds: Type.Integer({ description: 'How long an activation holds its slot without a heartbeat.' }),
});

const LONG_TEXT = 5000;

export const ProductBody = Type.Object(
  {
    id: Type.String({ description: 'Starts with p_.' }),
    userId: Type.String({ format: 'uuid' }),
    name: Type.String(),
    description: Type.String(),
    supportEmail: Nullable(Type.String()),
    createdAt: Timestamp,
    portalShow: Type.Boolean(),
    portalAllowDeviceReset: Type.Boolean(),
    hasImage: Type.Boolean(),
    fallbackEnabled: Type.Boolean(),
    purchaseNote: Nullable(Type.String()),
    actionButtonText: Nullable(Type.String()),
    actionButtonUrl: Nullable(Type.String()),
    portalDeviceResetLimit: Type.Integer(),
    portalDeviceResetWindowDays: Type.Integer(),
    defaultEntitlements: Type.Array(Type.String(), { description: 'What a new license of the product gets unless given its own.' }),
    floating: FloatingBody,
    trial: TrialBody,
  },
  { $id: 'Product' },
);

const writable = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: LONG_TEXT }),
  supportEmail: Nullable(Email),
  portalShow: Type.Boolean(),
  portalAllowDeviceReset: Type.Boolean(),
  fallbackEnabled: Type.Boolean(),
  purchaseNote: Nullable(Type.String({ maxLength: LONG_TEXT })),
  actionButtonText: Nullable(Type.String({ minLength: 1, maxLength: 100 })),
  actionButtonUrl: Nullable(Type.String({ maxLength: 2000, description: 'http(s) URL; may hold {key}.' })),
  portalDeviceResetLimit: Type.Integer({ minimum: 1, maximum: 1000, description: 'Portal device resets per license within the window (default 3).' }),
  portalDeviceResetWindowDays: Type.Integer({ minimum: 1, maximum: 365, description: 'Length of that window in days (default 30).' }),
  defaultEntitlements: EntitlementsInput,
  floating: Type.Object(
    {
      enabled: Type.Optional(Type.Boolean()),
      leaseSeconds: Type.Optional(
        Type.Integer({ minimum: LEASE_SECONDS_MIN, maximum: LEASE_SECONDS_MAX, description: `${LEASE_SECONDS_MIN} to ${LEASE_SECONDS_MAX} (default ${LEASE_SECONDS_DEFAULT}).` }),
      ),
    },
    { additionalProperties: false, description: 'Floating seats: activations hold leases renewed by heartbeats.' },
  ),
  trial: Type.Object(
    {
      enabled: Type.Optional(Type.Boolean()),
      days: Type.Optional(Type.Integer({ minimum: 1, maximum: 365, description: '1 to 365 (default 14).' })),
      maxDevices: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: '1 to 100 (default 1).' })),
    },
    { additionalProperties: false, description: 'Trials from the public API (POST /public/trials): one per product and device.' },
  ),
};

export const CreateProductBody = Type.Object(
  {
    name: writable.name,
    description: Type.Optional(writable.description),
    supportEmail: Type.Optional(writable.supportEmail),
    portalShow: Type.Optional(writable.portalShow),
    portalAllowDeviceReset: Type.Optional(writable.portalAllowDeviceReset),
    fallbackEnabled: Type.Optional(writable.fallbackEnabled),
    purchaseNote: Type.Optional(writable.purchaseNote),
    actionButtonText: Type.Optional(writable.actionButtonText),
    actionButtonUrl: Type.Optional(writable.actionButtonUrl),
    portalDeviceResetLimit: Type.Optional(writable.portalDeviceResetLimit),
    portalDeviceResetWindowDays: Type.Optional(writable.portalDeviceResetWindowDays),
    defaultEntitlements: Type.Optional(writable.defaultEntitlements),
    floating: Type.Optional(writable.floating),
    trial: Type.Optional(writable.trial),
  },
  { additionalProperties: false },
);

export const UpdateProductBody = Type.Partial(CreateProductBody, { additionalProperties: false });

export const ProductParams = Type.Object({ productId: Type.String({ minLength: 1, maxLength: 64 }) });

export const productView = (p: Product) => ({
  id: p.id,
  userId: p.accountId,
  name: p.name,
  description: p.description,
  supportEmail: p.supportEmail,
  createdAt: toIso(p.createdAt),
  portalShow: p.portalShow,
  portalAllowDeviceReset: p.portalAllowDeviceReset,
  hasImage: p.hasImage,
  fallbackEnabled: p.fallbackEnabled,
  purchaseNote: p.purchaseNote,
  actionButtonText: p.actionButtonText,
  actionButtonUrl: p.actionButtonUrl,
  portalDeviceResetLimit: p.portalDeviceResetLimit,
  portalDeviceResetWindowDays: p.portalDeviceResetWindowDays,
  defaultEntitlements: p.defaultEntitlements,
  floating: p.floating,
  trial: p.trial,
});

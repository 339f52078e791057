import { Type } from 'typebox';
import { toIso, toIsoOrNull } from '../../core/time.ts';
import type { LicenseStatus } from '../../core/license-status.ts';
import { Email, Nullable, StringEnum, Timestamp } from '../../http/schema-helpers.ts';
import { DEVICE_FIELD_SENT_MAX, DEVICE_IDENTIFIER_MAX, DEVICE_NAME_MAX, MAX_DEVICES_MAX } from './limits.ts';
import { LIST_LIMIT_MAX } from './service.ts';
import type { Device, License, LicenseRecord, LicenseType as LicenseTypeValue } from './types.ts';
import type { LicenseChanges, SubscriptionSnapshot } from '../../core/events.ts';
import { SubscriptionBody, subscriptionView } from '../subscriptions/schemas.ts';
import { EntitlementsInput } from '../products/schemas.ts';
import { METADATA_KEY_MAX, METADATA_KEYS_MAX, METADATA_VALUE_MAX } from './metadata.ts';


export const DeviceIdentifier = Type.String({ minLength: 1, maxLength: DEVICE_FIELD_SENT_MAX, description: `1 to ${DEVICE_IDENTIFIER_MAX} characters after trimming.` });
export const DeviceName = Type.String({ minLength: 1, maxLength: DEVICE_FIELD_SENT_MAX, description: `1 to ${DEVICE_NAME_MAX} characters after trimming.` });
/** The status rule's values (core/license-status.ts); a valid license is active or fallbacked. */
export const LicenseStatusBody = StringEnum<LicenseStatus>(['active', 'expired', 'revoked', 'fallbacked']);
export const ValidStatus = StringEnum<LicenseStatus>(['active', 'fallbacked'], { description: 'fallbacked: expired, but the product allows fallback (limited access).' });
const LicenseType = StringEnum<LicenseTypeValue>(['perpetual', 'timed']);
const MaxDevices = Type.Integer({ minimum: 1, maximum: MAX_DEVICES_MAX });
const ExpiresAtInput = Nullable(
  Type.String({ maxLength: 64, description: 'ISO 8601 date-time with Z or an offset, or YYYY-MM-DD (midnight UTC).' }),
);

export const DeviceBody = Type.Object(
  { identifier: Type.String(), name: Type.String(), activationDate: Timestamp },
);

/** A device in server views: when it was last seen, and its lease on a floating product. */
export const ServerDeviceBody = Type.Object({
  identifier: Type.String(),
  name: Type.String(),
  activationDate: Timestamp,
  lastSeenAt: Nullable(Timestamp),
  leaseExpiresAt: Nullable(Timestamp),
});

const Entitlements = Type.Array(Type.String(), { description: 'Feature codes the license unlocks.' });
const MetadataBody = Type.Record(Type.String(), Type.String(), { description: "The vendor's own data: server views only, never public." });
const MetadataInput = Type.Record(Type.String({ minLength: 1, maxLength: METADATA_KEY_MAX }), Nullable(Type.String({ maxLength: METADATA_VALUE_MAX })), {
  maxProperties: METADATA_KEYS_MAX,
  description: `At most ${METADATA_KEYS_MAX} keys of at most ${METADATA_KEY_MAX} characters, string values of at most ${METADATA_VALUE_MAX}; null removes a key.`,
});

export const LicenseBody = Type.Object(
  {
    key: Type.String(),
    userId: Type.String(),
    productId: Type.String(),
    type: LicenseType,
    expiresAt: Nullable(Timestamp),
    revoked: Type.Boolean(),
    email: Nullable(Type.String()),
    maxDevices: Type.Integer(),
    activeDevices: Type.Array(ServerDeviceBody),
    createdAt: Timestamp,
    entitlements: Entitlements,
    metadata: MetadataBody,
    trial: Type.Boolean({ description: 'Started as a trial from the public API.' }),
    subscription: Type.Optional(SubscriptionBody),
  },
  { $id: 'License' },
);

export const PublicLicenseBody = Type.Object(
  {
    key: Type.String(),
    productId: Type.String(),
    type: LicenseType,
    revoked: Type.Boolean(),
    maxDevices: Type.Integer(),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    entitlements: Entitlements,
    trial: Type.Boolean(),
  },
);

export const CreateLicenseBody = Type.Object(
  {
    productId: Type.String({ minLength: 1, maxLength: 64 }),
    type: LicenseType,
    expiresAt: Type.Optional(ExpiresAtInput),
    maxDevices: MaxDevices,
    email: Type.Optional(Nullable(Email)),
    sendEmail: Type.Optional(Type.Boolean({ description: 'Queue the purchase e-mail to `email` (required then).' })),
    entitlements: Type.Optional(EntitlementsInput),
    metadata: Type.Optional(MetadataInput),
  },
  { additionalProperties: false },
);

export const UpdateLicenseBody = Type.Object(
  {
    type: Type.Optional(LicenseType),
    expiresAt: Type.Optional(ExpiresAtInput),
    maxDevices: Type.Optional(MaxDevices),
    email: Type.Optional(Nullable(Email)),
    revoked: Type.Optional(Type.Boolean()),
    entitlements: Type.Optional(EntitlementsInput),
    metadata: Type.Optional(MetadataInput),
  },
  { additionalProperties: false },
);

export const RotateKeyBody = Type.Object(
  { notify: Type.Optional(Type.Boolean({ description: 'E-mail the customer the new key.' })) },
  { additionalProperties: false },
);

export const ServerActivateBody = Type.Object({
  productId: Type.String({ minLength: 1, maxLength: 64 }),
  device: Type.Object({ identifier: DeviceIdentifier, name: DeviceName }),
});

export const ServerValidateBody = Type.Object({
  deviceIdentifier: Type.Optional(DeviceIdentifier),
  productId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});

export const ServerValidationBody = Type.Object({
  isValid: Type.Boolean(),
  status: LicenseStatusBody,
  device: Nullable(ServerDeviceBody),
  license: Type.Ref('License'),
});

export const DeviceParams = Type.Object({ deviceId: Type.String({ minLength: 1, maxLength: 256 }) });

export const ListLicensesQuery = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 254 })),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: `1 to ${LIST_LIMIT_MAX}, default 50.` })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

export const LicensePageBody = Type.Object({
  data: Type.Array(Type.Ref('License')),
  nextCursor: Nullable(Type.String()),
});

export const deviceView = (d: Device) => ({ identifier: d.identifier, name: d.name, activationDate: toIso(d.activationDate) });

/** A device in public answers: on a floating product, when its lease ends (what the client SDK schedules heartbeats by). */
export const PublicDeviceBody = Type.Object({
  identifier: Type.String(),
  name: Type.String(),
  activationDate: Timestamp,
  leaseExpiresAt: Type.Optional(Type.String({ description: 'Floating products only: the lease end; renew it with a heartbeat before then.' })),
});
export const publicDeviceView = (d: Device) => (d.leaseExpiresAt == null ? deviceView(d) : { ...deviceView(d), leaseExpiresAt: toIso(d.leaseExpiresAt) });
export const serverDeviceView = (d: Device) => ({ ...deviceView(d), lastSeenAt: toIsoOrNull(d.lastSeenAt ?? null), leaseExpiresAt: toIsoOrNull(d.leaseExpiresAt ?? null) });

/**
 * A license as the server API shows it. `subscription` (null or the subscription it follows) is in
 * the server API's views; webhook bodies and server validation leave it out.
 */
export const licenseView = (l: License, subscription?: SubscriptionSnapshot | null) => ({
  key: l.key,
  userId: l.accountId,
  productId: l.productId,
  type: l.type,
  expiresAt: toIsoOrNull(l.expiresAt),
  revoked: l.revoked,
  email: l.email,
  maxDevices: l.maxDevices,
  activeDevices: l.activeDevices.map(serverDeviceView),
  createdAt: toIso(l.createdAt),
  entitlements: l.entitlements,
  metadata: l.metadata,
  trial: l.trial,
  ...(subscription !== undefined && { subscription: subscription && subscriptionView(subscription) }),
});

export const publicLicenseView = (l: LicenseRecord) => ({
  key: l.key,
  productId: l.productId,
  type: l.type,
  revoked: l.revoked,
  maxDevices: l.maxDevices,
  expiresAt: toIsoOrNull(l.expiresAt),
  createdAt: toIso(l.createdAt),
  entitlements: l.entitlements,
  trial: l.trial,
});

/** An update's changed fields as the API shows them (times as ISO strings): webhooks and the audit log. */
export function licenseChangesView(changes: LicenseChanges): Record<string, { from: unknown; to: unknown }> {
  const time = (v: unknown) => (typeof v === 'number' ? toIso(v) : v);
  return Object.fromEntries(
    Object.entries(changes).map(([field, change]) => [field, field === 'expiresAt' || field === 'createdAt' ? { from: time(change!.from), to: time(change!.to) } : change!]),
  );
}

import { Type } from 'typebox';
import { toIso } from '../../core/time.ts';
import { Nullable, Timestamp } from '../../http/schema-helpers.ts';
import { AUDIT_LIMIT_MAX, AUDIT_TYPES, type AuditEntry } from './service.ts';

export const AuditQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: `1 to ${AUDIT_LIMIT_MAX}, default 50.` })),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'nextCursor of the previous page.' })),
});

const ActorBody = Type.Object(
  {
    type: Type.String({ enum: ['api_key', 'dashboard_user', 'cli', 'public', 'portal', 'provider', 'lease'] }),
    apiKeyId: Type.Optional(Type.String()),
    userId: Type.Optional(Type.String()),
    email: Type.Optional(Type.String()),
    provider: Type.Optional(Type.String()),
  },
  { description: 'Who made the change: an API key (apiKeyId), a dashboard user (userId), the CLI, the public API, the portal (the customer\'s email) or a payment provider.' },
);

/** The account-wide log's filters: the license log's page, plus a type and a license key. */
export const AccountEventsQuery = Type.Object({
  type: Type.Optional(Type.String({ enum: [...AUDIT_TYPES], description: 'Only entries of this type.' })),
  licenseKey: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "Only this license's entries (case and spaces as the license key header takes them)." })),
  ...AuditQuery.properties,
});

const AuditType = Type.String({ enum: [...AUDIT_TYPES] });

export const AuditPageBody = Type.Object({
  data: Type.Array(
    Type.Object({
      type: AuditType,
      actor: ActorBody,
      changes: Nullable(Type.Object({}, { additionalProperties: true, description: 'Fields changed as {field: {from, to}}; {device} or {devices} for device events; null on delete.' })),
      createdAt: Timestamp,
    }),
  ),
  nextCursor: Nullable(Type.String()),
});

export const auditView = (e: AuditEntry) => ({ type: e.type, actor: e.actor, changes: e.changes, createdAt: toIso(e.createdAt) });

export const AccountEventsBody = Type.Object({
  data: Type.Array(
    Type.Object({
      type: AuditType,
      licenseKey: Type.String(),
      actor: ActorBody,
      changes: AuditPageBody.properties.data.items.properties.changes,
      createdAt: Timestamp,
    }),
  ),
  nextCursor: Nullable(Type.String()),
});

export const accountEventView = (e: AuditEntry) => ({ type: e.type, licenseKey: e.licenseKey, actor: e.actor, changes: e.changes, createdAt: toIso(e.createdAt) });

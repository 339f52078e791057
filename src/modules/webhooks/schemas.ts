import { Type } from 'typebox';
import { toIso, toIsoOrNull } from '../../core/time.ts';
import { Nullable, Timestamp } from '../../http/schema-helpers.ts';
import { DELIVERIES_LIMIT_MAX } from './service.ts';
import { type DeliveryDetail, type DeliveryWithAttempts, WEBHOOK_EVENT_TYPES, type WebhookDelivery, type WebhookEndpoint } from './types.ts';

const EventName = Type.String({ enum: ['*', ...WEBHOOK_EVENT_TYPES] });
const Events = Type.Array(EventName, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length + 1, description: 'Event types to receive; ["*"] for all.' });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'http:// or https://; must resolve to public addresses unless WEBHOOK_ALLOW_PRIVATE=true.' });
const Description = Nullable(Type.String({ maxLength: 500 }));

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  { url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Description), enabled: Type.Optional(Type.Boolean({ description: 'true re-enables a disabled endpoint.' })) },
  { additionalProperties: false },
);

export const WebhookParams = Type.Object({ webhookId: Type.String({ minLength: 1, maxLength: 64 }) });
export const DeliveryParams = Type.Object({ webhookId: Type.String({ minLength: 1, maxLength: 64 }), deliveryId: Type.String({ minLength: 1, maxLength: 64 }) });

export const DeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: `1 to ${DELIVERIES_LIMIT_MAX}, default 50.` })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

const endpointFields = {
  id: Type.String(),
  url: Type.String(),
  description: Nullable(Type.String()),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledAt: Nullable(Timestamp),
  createdAt: Timestamp,
};

export const WebhookEndpointBody = Type.Object(endpointFields);
export const CreatedWebhookEndpointBody = Type.Object({
  ...endpointFields,
  secret: Type.String({ description: 'whsec_...: the signing secret, shown only in this answer.' }),
});

const AttemptBody = Type.Object({
  attemptedAt: Timestamp,
  statusCode: Nullable(Type.Integer({ description: 'Null when no answer came (refused, timed out, connection closed).' })),
  durationMs: Type.Integer(),
  success: Type.Boolean(),
  error: Nullable(Type.String()),
});

export const DeliveryBody = Type.Object({
  id: Type.String(),
  eventId: Type.String(),
  eventType: Type.String(),
  status: Type.String({ enum: ['pending', 'succeeded', 'failed'] }),
  attemptCount: Type.Integer(),
  lastStatusCode: Nullable(Type.Integer()),
  nextAttemptAt: Nullable(Timestamp),
  deliveredAt: Nullable(Timestamp),
  createdAt: Timestamp,
  attempts: Type.Array(AttemptBody),
});

const HeadersBody = Type.Record(Type.String(), Type.String());

const AttemptDetailBody = Type.Object({
  ...AttemptBody.properties,
  request: Nullable(Type.Object({ headers: HeadersBody }, { description: 'The headers sent (Tessera-Signature included; the secret never). The body is the delivery\'s `body`.' })),
  response: Nullable(
    Type.Object(
      {
        headers: HeadersBody,
        body: Type.String({ description: "The answer's first 4 KiB (UTF-8)." }),
        truncated: Type.Boolean({ description: 'true when the answer was longer than `body`.' }),
      },
      { description: 'Null when no answer came.' },
    ),
  ),
});

export const DeliveryDetailBody = Type.Object({
  ...DeliveryBody.properties,
  body: Type.String({ description: 'The JSON body each attempt POSTs.' }),
  attempts: Type.Array(AttemptDetailBody),
});

export const DeliveryPageBody = Type.Object({ data: Type.Array(DeliveryBody), nextCursor: Nullable(Type.String()) });

export const endpointView = (e: WebhookEndpoint) => ({
  id: e.id,
  url: e.url,
  description: e.description,
  events: e.events,
  enabled: e.enabled,
  disabledAt: toIsoOrNull(e.disabledAt),
  createdAt: toIso(e.createdAt),
});

export const deliveryView = (d: WebhookDelivery & Partial<Pick<DeliveryWithAttempts, 'log'>>) => ({
  id: d.id,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attemptCount: d.attempts,
  lastStatusCode: d.lastStatusCode,
  nextAttemptAt: toIsoOrNull(d.nextAttemptAt),
  deliveredAt: toIsoOrNull(d.deliveredAt),
  createdAt: toIso(d.createdAt),
  attempts: (d.log ?? []).map((a) => ({ attemptedAt: toIso(a.attemptedAt), statusCode: a.statusCode, durationMs: a.durationMs, success: a.success, error: a.error })),
});

export const deliveryDetailView = (d: DeliveryDetail) => ({
  ...deliveryView({ ...d, log: [] }),
  body: d.body,
  attempts: d.log.map((a) => ({
    attemptedAt: toIso(a.attemptedAt),
    statusCode: a.statusCode,
    durationMs: a.durationMs,
    success: a.success,
    error: a.error,
    request: a.requestHeaders && { headers: a.requestHeaders },
    response: a.response,
  })),
});

import { DOMAIN_EVENT_TYPES } from '../../core/events.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { AnswerRecord, Headers } from './exchange.ts';

/** What an endpoint can subscribe to (every domain event, purchases included); `*` takes all. */
export const WEBHOOK_EVENT_TYPES = DOMAIN_EVENT_TYPES;

export interface WebhookEndpoint {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  /** Event types, or ['*']. */
  events: string[];
  enabled: boolean;
  disabledAt: number | null;
  failingSince: number | null;
  createdAt: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookAttempt {
  attemptedAt: number;
  statusCode: number | null;
  durationMs: number;
  success: boolean;
  error: string | null;
}

/** An attempt with what it sent and got back (null: made before these were kept, or nothing sent). */
export interface AttemptExchange extends WebhookAttempt {
  requestHeaders: Headers | null;
  response: AnswerRecord | null;
}

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
}

export interface DeliveryWithAttempts extends WebhookDelivery {
  log: WebhookAttempt[];
}

/** One delivery in full: the body it sends and each attempt's request and answer. */
export interface DeliveryDetail extends WebhookDelivery {
  body: string;
  log: AttemptExchange[];
}

export interface NewDelivery {
  id: string;
  endpointId: string;
  accountId: string;
  eventId: string;
  eventType: string;
  body: string;
  createdAt: number;
}

/** What the worker needs to send one delivery. */
export interface DeliveryTarget {
  deliveryId: string;
  eventId: string;
  eventType: string;
  body: string;
  endpointId: string;
  accountId: string;
  url: string;
  secretSealed: string;
  enabled: boolean;
}

export interface AttemptOutcome extends AttemptExchange {
  deliveryId: string;
  status: DeliveryStatus;
  nextAttemptAt: number | null;
}

/** A delivery to a disabled endpoint: failed at once, nothing sent (redeliver it once the endpoint is enabled). */
export const endpointDisabled = (deliveryId: string, at: number): AttemptOutcome => ({
  deliveryId,
  attemptedAt: at,
  statusCode: null,
  durationMs: 0,
  success: false,
  error: 'endpoint disabled',
  requestHeaders: null,
  response: null,
  status: 'failed',
  nextAttemptAt: null,
});

export type EndpointFields = Partial<Pick<WebhookEndpoint, 'url' | 'description' | 'events' | 'enabled'>>;

/** Storage of endpoints, deliveries and attempts; every account-facing query filters by account in SQL. */
export interface WebhookRepository {
  insertEndpoint(unit: Unit, endpoint: WebhookEndpoint, secretSealed: string): Promise<void>;
  countEndpoints(unit: Unit, accountId: string): Promise<number>;
  listEndpoints(accountId: string): Promise<WebhookEndpoint[]>;
  getEndpoint(accountId: string, id: string, unit?: Unit): Promise<WebhookEndpoint | undefined>;
  /** Returns the number of rows changed (0: not the account's). */
  updateEndpoint(unit: Unit, accountId: string, id: string, fields: EndpointFields): Promise<number>;
  deleteEndpoint(unit: Unit, accountId: string, id: string): Promise<number>;
  /** The account's enabled endpoints, read in the event's unit. */
  /** The account's endpoints, enabled or not, for an event's subscribers. */
  eventEndpoints(unit: Unit, accountId: string): Promise<Pick<WebhookEndpoint, 'id' | 'events' | 'enabled'>[]>;
  insertDeliveries(unit: Unit, deliveries: NewDelivery[]): Promise<void>;
  /** Newest first (ids sort by time), older than the delivery `before` when given. */
  listDeliveries(accountId: string, endpointId: string, options: { limit: number; before?: string }): Promise<DeliveryWithAttempts[]>;
  /** One delivery with its body and its attempts' requests and answers. */
  getDelivery(accountId: string, endpointId: string, deliveryId: string): Promise<DeliveryDetail | undefined>;
  /** The delivery's event and body, for a redelivery. */
  getDeliveryBody(unit: Unit, accountId: string, endpointId: string, deliveryId: string): Promise<Pick<NewDelivery, 'eventId' | 'eventType' | 'body'> | undefined>;
  loadTarget(deliveryId: string): Promise<DeliveryTarget | undefined>;
  recordAttempt(unit: Unit, outcome: AttemptOutcome): Promise<void>;
  /** After a success: the endpoint is healthy again. */
  clearFailing(unit: Unit, endpointId: string): Promise<void>;
  /** After a failure: marks the endpoint failing (keeping the first time); disables it when failing since `before`; returns whether this call disabled it. */
  markFailing(unit: Unit, endpointId: string, now: number, disableIfSince: number): Promise<boolean>;
  /** Deletes deliveries (and their attempts) made before `before` (epoch ms). */
  purgeDeliveries(before: number): Promise<number>;
}

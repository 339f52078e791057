import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import { type DomainEvent, eventAccountId } from '../../core/events.ts';
import { idBase62, randomBase62, timeOrderedId } from '../../core/ids.ts';
import type { Principal } from '../../core/principal.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { LicenseService } from '../licenses/service.ts';
import type { Outbox } from '../outbox/outbox.ts';
import { ForbiddenAddressError, checkHost, hostOf } from './address-guard.ts';
import { pingBody, PING_EVENT, webhookBody } from './payload.ts';
import { type DeliveryDetail, type DeliveryWithAttempts, type EndpointFields, endpointDisabled, type NewDelivery, type WebhookDelivery, type WebhookEndpoint, type WebhookRepository } from './types.ts';

/** The outbox job kind a delivery travels as; its payload is `{deliveryId}`. */
export const WEBHOOK_JOB = 'webhook';
export const ENDPOINTS_PER_ACCOUNT = 20;
export const DELIVERIES_LIMIT_DEFAULT = 50;
export const DELIVERIES_LIMIT_MAX = 100;

export const newEndpointId = (): string => `we_${randomBase62(20)}`;
/** Time-ordered: deliveries are listed newest first and purged oldest first by their id. */
export const newDeliveryId = (at: number): string => `wd_${timeOrderedId(at)}`;
export const newEventId = (): string => `evt_${idBase62(20)}`;
const newSecret = (): string => `whsec_${randomBase62(32)}`;

export interface CreateEndpointInput {
  url: string;
  events: string[];
  description?: string | null;
}

export type UpdateEndpointInput = Partial<CreateEndpointInput> & { enabled?: boolean };

/** `*` anywhere means all; otherwise the list without duplicates. */
const normalizeEvents = (events: string[]): string[] => (events.includes('*') ? ['*'] : [...new Set(events)]);
const subscribed = (events: string[], type: string): boolean => events[0] === '*' || events.includes(type);

const disabledEndpoint = () => new AppError('invalid_request', 'The endpoint is disabled; enable it first (PATCH with {"enabled": true}).');
const pendingView = (d: NewDelivery): WebhookDelivery => ({ ...d, status: 'pending', attempts: 0, lastStatusCode: null, nextAttemptAt: d.createdAt, deliveredAt: null });

const encodeCursor = (d: WebhookDelivery): string => Buffer.from(d.id).toString('base64url');

function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString();
  if (/^wd_[0-9a-z]{13}[A-Za-z0-9]{8}$/.test(id)) return id;
  throw invalidRequest('query.cursor', 'is not a cursor this API returned');
}

/**
 * Operator webhooks: the endpoints API, and the in-unit subscriber that turns each domain event
 * into one delivery row and one outbox job per subscribed endpoint of the event's account,
 * written in the unit of the change (never lost, never sent for a change that rolled back).
 * Sending is the worker's (delivery.ts).
 */
export class WebhookService {
  constructor(
    private readonly repo: WebhookRepository,
    private readonly units: UnitRunner,
    private readonly outbox: Outbox,
    private readonly licenses: LicenseService,
    private readonly secrets: SecretBox,
    private readonly allowPrivate: boolean,
    private readonly clock: () => number = Date.now,
  ) {}

  async create(principal: Principal, input: CreateEndpointInput): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const url = await this.checkUrl(input.url);
    const endpoint: WebhookEndpoint = {
      id: newEndpointId(),
      accountId: principal.accountId,
      url,
      description: input.description?.trim() || null,
      events: normalizeEvents(input.events),
      enabled: true,
      disabledAt: null,
      failingSince: null,
      createdAt: this.clock(),
    };
    const secret = newSecret();
    await this.units.run(async (unit) => {
      if ((await this.repo.countEndpoints(unit, principal.accountId)) >= ENDPOINTS_PER_ACCOUNT) {
        throw invalidRequest('url', `an account has at most ${ENDPOINTS_PER_ACCOUNT} webhook endpoints`);
      }
      // Sealed to this endpoint's id: the ciphertext opens nowhere else.
      await this.repo.insertEndpoint(unit, endpoint, this.secrets.seal(secret, endpoint.id));
    });
    return { endpoint, secret };
  }

  list(principal: Principal): Promise<WebhookEndpoint[]> {
    return this.repo.listEndpoints(principal.accountId);
  }

  async get(principal: Principal, id: string, unit?: Unit): Promise<WebhookEndpoint> {
    const endpoint = await this.repo.getEndpoint(principal.accountId, id, unit);
    if (!endpoint) throw notFound('Webhook endpoint');
    return endpoint;
  }

  async update(principal: Principal, id: string, input: UpdateEndpointInput): Promise<WebhookEndpoint> {
    const fields: EndpointFields = {};
    if (input.url !== undefined) fields.url = await this.checkUrl(input.url);
    if (input.events !== undefined) fields.events = normalizeEvents(input.events);
    if (input.description !== undefined) fields.description = input.description?.trim() || null;
    if (input.enabled !== undefined) fields.enabled = input.enabled;
    return this.units.run(async (unit) => {
      if (Object.keys(fields).length > 0 && (await this.repo.updateEndpoint(unit, principal.accountId, id, fields)) === 0) throw notFound('Webhook endpoint');
      return this.get(principal, id, unit);
    });
  }

  /** Deletes the endpoint with its deliveries; jobs still queued for it find nothing and end. */
  async delete(principal: Principal, id: string): Promise<void> {
    const deleted = await this.units.run((unit) => this.repo.deleteEndpoint(unit, principal.accountId, id));
    if (deleted === 0) throw notFound('Webhook endpoint');
  }

  async deliveries(principal: Principal, id: string, query: { limit?: number; cursor?: string }): Promise<{ data: DeliveryWithAttempts[]; nextCursor: string | null }> {
    await this.get(principal, id);
    const limit = query.limit ?? DELIVERIES_LIMIT_DEFAULT;
    const data = await this.repo.listDeliveries(principal.accountId, id, { limit: limit + 1, before: query.cursor ? decodeCursor(query.cursor) : undefined });
    const more = data.length > limit;
    if (more) data.pop();
    return { data, nextCursor: more ? encodeCursor(data[data.length - 1]!) : null };
  }

  /** One delivery with its body and each attempt's request and answer. */
  async delivery(principal: Principal, endpointId: string, deliveryId: string): Promise<DeliveryDetail> {
    await this.get(principal, endpointId);
    const found = await this.repo.getDelivery(principal.accountId, endpointId, deliveryId);
    if (!found) throw notFound('Delivery');
    return found;
  }

  /**
   * Sends a test event (`ping`) to one endpoint, whatever events it takes, through the same path
   * as every event: a delivery row and an outbox job in one unit, signed, retried and logged like
   * the others, so the test shows what a real delivery would meet.
   */
  test(principal: Principal, endpointId: string): Promise<WebhookDelivery> {
    return this.units.run(async (unit) => {
      const endpoint = await this.get(principal, endpointId, unit);
      if (!endpoint.enabled) throw disabledEndpoint();
      const createdAt = this.clock();
      const eventId = newEventId();
      const delivery: NewDelivery = { id: newDeliveryId(createdAt), endpointId, accountId: principal.accountId, eventId, eventType: PING_EVENT, body: pingBody(eventId, endpoint, createdAt), createdAt };
      await this.queue(unit, [delivery]);
      return pendingView(delivery);
    });
  }

  /**
   * Sends an earlier delivery's event again as a new delivery (same event id and body, so a
   * receiver that deduplicates on the event id sees it once), with its own attempts and retries.
   */
  redeliver(principal: Principal, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    return this.units.run(async (unit) => {
      const endpoint = await this.get(principal, endpointId, unit);
      const original = await this.repo.getDeliveryBody(unit, principal.accountId, endpointId, deliveryId);
      if (!original) throw notFound('Delivery');
      if (!endpoint.enabled) throw disabledEndpoint();
      const createdAt = this.clock();
      const delivery: NewDelivery = { id: newDeliveryId(createdAt), endpointId, accountId: principal.accountId, ...original, createdAt };
      await this.queue(unit, [delivery]);
      return pendingView(delivery);
    });
  }

  /**
   * The in-unit subscriber: queues the event for every enabled endpoint of its account that takes
   * it. A disabled one gets the delivery too, failed at once ("endpoint disabled", nothing sent), so
   * its deliveries list shows what it missed and each can be redelivered once it is enabled again.
   */
  async onEvent(event: DomainEvent, unit: Unit): Promise<void> {
    const accountId = eventAccountId(event);
    const endpoints = (await this.repo.eventEndpoints(unit, accountId)).filter((e) => subscribed(e.events, event.type));
    if (endpoints.length === 0) return;
    const eventId = newEventId();
    const body = await webhookBody(event, eventId, (license, limit) => this.licenses.someDevices(unit, license.key, limit));
    const createdAt = this.clock();
    const deliveryTo = (endpointId: string): NewDelivery => ({ id: newDeliveryId(createdAt), endpointId, accountId, eventId, eventType: event.type, body, createdAt });
    const enabled = endpoints.filter((e) => e.enabled);
    if (enabled.length > 0) await this.queue(unit, enabled.map((e) => deliveryTo(e.id)));
    for (const e of endpoints) {
      if (e.enabled) continue;
      const missed = deliveryTo(e.id);
      await this.repo.insertDeliveries(unit, [missed]);
      await this.repo.recordAttempt(unit, endpointDisabled(missed.id, createdAt));
    }
  }

  private async queue(unit: Unit, deliveries: NewDelivery[]): Promise<void> {
    await this.repo.insertDeliveries(unit, deliveries);
    // Owned by the account and the endpoint: the outbox caps the attempts in flight of each (fairness).
    for (const d of deliveries) await this.outbox.enqueue(unit, WEBHOOK_JOB, { deliveryId: d.id }, { accountId: d.accountId, target: d.endpointId });
  }

  /** http(s) only, no credentials, a host that resolves, and (unless WEBHOOK_ALLOW_PRIVATE) to public addresses only. */
  private async checkUrl(raw: string): Promise<string> {
    let url: URL;
    try {
      url = new URL(raw.trim());
    } catch {
      throw invalidRequest('url', 'must be an absolute http:// or https:// URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidRequest('url', 'must be an http:// or https:// URL');
    if (url.username || url.password) throw invalidRequest('url', 'must not contain a user name or password');
    try {
      await checkHost(hostOf(url), this.allowPrivate);
    } catch (err) {
      if (err instanceof ForbiddenAddressError) throw invalidRequest('url', `${err.message}; such addresses are refused (WEBHOOK_ALLOW_PRIVATE)`);
      throw invalidRequest('url', `the host ${url.hostname} could not be resolved`);
    }
    return url.toString();
  }

  /** Deliveries waiting to be sent (a first attempt or a retry), and when the oldest was queued (metrics). */
  backlog(): Promise<{ count: number; oldestCreatedAt: number | null }> {
    return this.outbox.pending(WEBHOOK_JOB);
  }

  /** Deliveries (and their attempts) are kept this long, then purged by the worker. */
  purge(now: number, keepMs: number): Promise<number> {
    return this.repo.purgeDeliveries(now - keepMs);
  }
}

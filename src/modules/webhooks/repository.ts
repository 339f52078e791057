import { randomUUID } from 'node:crypto';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import type { Selectable, Updateable } from 'kysely';
import { bool, flag, type WebhookEndpointsTable } from '../../storage/schema.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import type { AttemptOutcome, Cursor, DeliveryStatus, DeliveryTarget, DeliveryWithAttempts, EndpointFields, NewDelivery, WebhookEndpoint, WebhookRepository } from './types.ts';

const toEndpoint = (r: Selectable<WebhookEndpointsTable>): WebhookEndpoint => ({
  id: r.id,
  accountId: r.user_id,
  url: r.url,
  description: r.description,
  events: JSON.parse(r.events) as string[],
  enabled: bool(r.enabled),
  disabledAt: r.disabled_at === null ? null : Number(r.disabled_at),
  failingSince: r.failing_since === null ? null : Number(r.failing_since),
  createdAt: Number(r.created_at),
});

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));
const PURGE_CHUNK = 5000;

export class SqlWebhookRepository implements WebhookRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async insertEndpoint(unit: Unit, e: WebhookEndpoint, secretSealed: string): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('webhook_endpoints').values({
        id: e.id,
        user_id: e.accountId,
        url: e.url,
        description: e.description,
        events: JSON.stringify(e.events),
        secret_sealed: secretSealed,
        enabled: flag(e.enabled),
        disabled_at: null,
        failing_since: null,
        created_at: e.createdAt,
      }),
    );
  }

  async countEndpoints(unit: Unit, accountId: string): Promise<number> {
    const row = await executorOf(unit).first(this.db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('user_id', '=', accountId));
    return Number(row?.n ?? 0);
  }

  async listEndpoints(accountId: string): Promise<WebhookEndpoint[]> {
    const rows = await this.store.read.all(this.db.selectFrom('webhook_endpoints').selectAll().where('user_id', '=', accountId).orderBy('created_at').orderBy('id'));
    return rows.map(toEndpoint);
  }

  async getEndpoint(accountId: string, id: string, unit?: Unit): Promise<WebhookEndpoint | undefined> {
    const row = await readerOf(this.store, unit).first(this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('user_id', '=', accountId));
    return row && toEndpoint(row);
  }

  updateEndpoint(unit: Unit, accountId: string, id: string, f: EndpointFields): Promise<number> {
    const set: Updateable<WebhookEndpointsTable> = {};
    if (f.url !== undefined) set.url = f.url;
    if (f.description !== undefined) set.description = f.description;
    if (f.events !== undefined) set.events = JSON.stringify(f.events);
    // Enabling again starts with a clean slate: the 24-hour failure clock restarts.
    if (f.enabled !== undefined) Object.assign(set, { enabled: flag(f.enabled), disabled_at: null, failing_since: null });
    return executorOf(unit).run(this.db.updateTable('webhook_endpoints').set(set).where('id', '=', id).where('user_id', '=', accountId));
  }

  deleteEndpoint(unit: Unit, accountId: string, id: string): Promise<number> {
    return executorOf(unit).run(this.db.deleteFrom('webhook_endpoints').where('id', '=', id).where('user_id', '=', accountId));
  }

  async enabledEndpoints(unit: Unit, accountId: string): Promise<Pick<WebhookEndpoint, 'id' | 'events'>[]> {
    const rows = await executorOf(unit).all(
      this.db.selectFrom('webhook_endpoints').select(['id', 'events']).where('user_id', '=', accountId).where('enabled', '=', 1),
    );
    return rows.map((r) => ({ id: r.id, events: JSON.parse(r.events) as string[] }));
  }

  async insertDeliveries(unit: Unit, deliveries: NewDelivery[]): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('webhook_deliveries').values(
        deliveries.map((d) => ({
          id: d.id,
          endpoint_id: d.endpointId,
          user_id: d.accountId,
          event_id: d.eventId,
          event_type: d.eventType,
          body: d.body,
          status: 'pending' as const,
          attempts: 0,
          last_status_code: null,
          next_attempt_at: d.createdAt,
          delivered_at: null,
          created_at: d.createdAt,
        })),
      ),
    );
  }

  async listDeliveries(accountId: string, endpointId: string, { limit, after }: { limit: number; after?: Cursor }): Promise<DeliveryWithAttempts[]> {
    const rows = await this.store.read.all(
      this.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'endpoint_id', 'event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'next_attempt_at', 'delivered_at', 'created_at'])
        .where('endpoint_id', '=', endpointId)
        .where('user_id', '=', accountId)
        .$if(after !== undefined, (q) =>
          q.where((eb) => eb.or([eb('created_at', '<', after!.createdAt), eb.and([eb('created_at', '=', after!.createdAt), eb('id', '<', after!.id)])])),
        )
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit),
    );
    if (rows.length === 0) return [];
    const attempts = await this.store.read.all(
      this.db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where(
          'delivery_id',
          'in',
          rows.map((r) => r.id),
        )
        .orderBy('attempted_at'),
    );
    return rows.map((r) => ({
      id: r.id,
      endpointId: r.endpoint_id,
      eventId: r.event_id,
      eventType: r.event_type,
      status: r.status as DeliveryStatus,
      attempts: r.attempts,
      lastStatusCode: r.last_status_code,
      nextAttemptAt: num(r.next_attempt_at),
      deliveredAt: num(r.delivered_at),
      createdAt: Number(r.created_at),
      log: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({ attemptedAt: Number(a.attempted_at), statusCode: a.status_code, durationMs: a.duration_ms, success: bool(a.success), error: a.error })),
    }));
  }

  async getDeliveryBody(unit: Unit, accountId: string, endpointId: string, deliveryId: string) {
    const row = await executorOf(unit).first(
      this.db
        .selectFrom('webhook_deliveries')
        .select(['event_id', 'event_type', 'body'])
        .where('id', '=', deliveryId)
        .where('endpoint_id', '=', endpointId)
        .where('user_id', '=', accountId),
    );
    return row && { eventId: row.event_id, eventType: row.event_type, body: row.body };
  }

  async loadTarget(deliveryId: string): Promise<DeliveryTarget | undefined> {
    const row = await this.store.read.first(
      this.db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
        .select(['d.id', 'd.event_id', 'd.event_type', 'd.body', 'e.id as endpoint_id', 'e.user_id', 'e.url', 'e.secret_sealed', 'e.enabled'])
        .where('d.id', '=', deliveryId),
    );
    return (
      row && {
        deliveryId: row.id,
        eventId: row.event_id,
        eventType: row.event_type,
        body: row.body,
        endpointId: row.endpoint_id,
        accountId: row.user_id,
        url: row.url,
        secretSealed: row.secret_sealed,
        enabled: bool(row.enabled),
      }
    );
  }

  async recordAttempt(unit: Unit, o: AttemptOutcome): Promise<void> {
    const tx = executorOf(unit);
    await tx.run(
      this.db.insertInto('webhook_attempts').values({
        id: randomUUID(),
        delivery_id: o.deliveryId,
        attempted_at: o.attemptedAt,
        status_code: o.statusCode,
        duration_ms: o.durationMs,
        success: flag(o.success),
        error: o.error?.slice(0, 500) ?? null,
      }),
    );
    await tx.run(
      this.db
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          status: o.status,
          attempts: eb('attempts', '+', 1),
          last_status_code: o.statusCode,
          next_attempt_at: o.nextAttemptAt,
          ...(o.success ? { delivered_at: o.attemptedAt } : {}),
        }))
        .where('id', '=', o.deliveryId),
    );
  }

  async clearFailing(unit: Unit, endpointId: string): Promise<void> {
    await executorOf(unit).run(this.db.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', endpointId).where('failing_since', 'is not', null));
  }

  async markFailing(unit: Unit, endpointId: string, now: number, disableIfSince: number): Promise<boolean> {
    const tx = executorOf(unit);
    await tx.run(this.db.updateTable('webhook_endpoints').set({ failing_since: now }).where('id', '=', endpointId).where('failing_since', 'is', null));
    const disabled = await tx.run(
      this.db
        .updateTable('webhook_endpoints')
        .set({ enabled: 0, disabled_at: now })
        .where('id', '=', endpointId)
        .where('enabled', '=', 1)
        .where('failing_since', '<=', disableIfSince),
    );
    return disabled > 0;
  }

  async purgeDeliveries(before: number): Promise<number> {
    let total = 0;
    for (;;) {
      const old = this.db.selectFrom('webhook_deliveries').select('id').where('created_at', '<', before).limit(PURGE_CHUNK);
      const n = await this.store.write((tx) => tx.run(this.db.deleteFrom('webhook_deliveries').where('id', 'in', old)));
      total += n;
      if (n < PURGE_CHUNK) return total;
    }
  }
}

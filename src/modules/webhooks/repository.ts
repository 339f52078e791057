import { timeOrderedFloor, timeOrderedId } from '../../core/ids.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { type Selectable, sql, type Updateable } from 'kysely';
import { bool, flag, type WebhookDeliveriesTable, type WebhookEndpointsTable } from '../../storage/schema.ts';
import { Prepared } from '../../storage/prepared.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import type { AttemptExchange, AttemptOutcome, DeliveryDetail, DeliveryStatus, DeliveryTarget, DeliveryWithAttempts, EndpointFields, NewDelivery, WebhookEndpoint, WebhookRepository } from './types.ts';

const toEndpoint = (r: Selectable<WebhookEndpointsTable>): WebhookEndpoint => ({
  id: r.id,
  accountId: r.account_id,
  url: r.url,
  description: r.description,
  events: JSON.parse(r.events) as string[],
  enabled: bool(r.enabled),
  disabledAt: r.disabled_at === null ? null : Number(r.disabled_at),
  failingSince: r.failing_since === null ? null : Number(r.failing_since),
  createdAt: Number(r.created_at),
});

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** A delivery row's own fields, as the list and the detail page both show them. */
const toDelivery = (r: Pick<Selectable<WebhookDeliveriesTable>, 'id' | 'endpoint_id' | 'event_id' | 'event_type' | 'status' | 'attempts' | 'last_status_code' | 'next_attempt_at' | 'delivered_at' | 'created_at'>) => ({
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
});
const PURGE_CHUNK = 5000;

type DeliveryParams = { id: string; endpoint: string; account: string; event: string; type: string; body: string; at: number };
type AttemptParams = {
  id: string;
  delivery: string;
  at: number;
  code: number | null;
  ms: number;
  success: number;
  error: string | null;
  requestHeaders: string | null;
  responseHeaders: string | null;
  responseBody: string | null;
  truncated: number;
};
type OutcomeParams = { delivery: string; status: string; code: number | null; next: number | null; delivered: number | null };

/** The statements run for every event and every delivery attempt: built and compiled once. */
function webhookStatements(store: Store) {
  const db = store.db;
  return {
    endpoints: new Prepared<{ account: string }, { id: string; events: string; enabled: boolean | number }>((p) =>
      db.selectFrom('webhook_endpoints').select(['id', 'events', 'enabled']).where('account_id', '=', p('account')),
    ),
    insertDelivery: new Prepared<DeliveryParams, never>((p) =>
      db.insertInto('webhook_deliveries').values({
        id: p('id'),
        endpoint_id: p('endpoint'),
        account_id: p('account'),
        event_id: p('event'),
        event_type: p('type'),
        body: p('body'),
        status: sql.lit('pending'),
        attempts: sql.lit(0),
        last_status_code: sql`NULL`,
        next_attempt_at: p('at'),
        delivered_at: sql`NULL`,
        created_at: p('at'),
      }),
    ),
    target: new Prepared<{ delivery: string }, TargetRow>((p) =>
      db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
        .select(['d.id', 'd.event_id', 'd.event_type', 'd.body', 'e.id as endpoint_id', 'e.account_id', 'e.url', 'e.secret_sealed', 'e.enabled'])
        .where('d.id', '=', p('delivery')),
    ),
    insertAttempt: new Prepared<AttemptParams, never>((p) =>
      db.insertInto('webhook_attempts').values({
        id: p('id'),
        delivery_id: p('delivery'),
        attempted_at: p('at'),
        status_code: p('code'),
        duration_ms: p('ms'),
        success: p('success'),
        error: p('error'),
        request_headers: p('requestHeaders'),
        response_headers: p('responseHeaders'),
        response_body: p('responseBody'),
        response_truncated: p('truncated'),
      }),
    ),
    outcome: new Prepared<OutcomeParams, never>((p) =>
      db
        .updateTable('webhook_deliveries')
        .set({
          status: p('status') as DeliveryStatus,
          attempts: sql<number>`attempts + 1`,
          last_status_code: p('code'),
          next_attempt_at: p('next'),
          // Set by a success; a later failed redelivery attempt keeps it.
          delivered_at: sql<number | null>`coalesce(${p('delivered')}, delivered_at)`,
        })
        .where('id', '=', p('delivery')),
    ),
    clearFailing: new Prepared<{ endpoint: string }, never>((p) =>
      db.updateTable('webhook_endpoints').set({ failing_since: sql`NULL` }).where('id', '=', p('endpoint')).where('failing_since', 'is not', null),
    ),
  };
}

type TargetRow = { id: string; event_id: string; event_type: string; body: string; endpoint_id: string; account_id: string; url: string; secret_sealed: string; enabled: boolean | number };

export class SqlWebhookRepository implements WebhookRepository {
  private readonly q: ReturnType<typeof webhookStatements>;

  constructor(private readonly store: Store) {
    this.q = webhookStatements(store);
  }

  private get db() {
    return this.store.db;
  }

  async insertEndpoint(unit: Unit, e: WebhookEndpoint, secretSealed: string): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('webhook_endpoints').values({
        id: e.id,
        account_id: e.accountId,
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
    const tx = executorOf(unit);
    // PostgreSQL: the account's row locked first, so two creations at once count one after the
    // other and the cap holds (SQLite's units already run one at a time).
    if (this.store.lockRows) await tx.first(this.db.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate());
    const row = await tx.first(this.db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId));
    return Number(row?.n ?? 0);
  }

  async listEndpoints(accountId: string): Promise<WebhookEndpoint[]> {
    const rows = await this.store.read.all(this.db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id'));
    return rows.map(toEndpoint);
  }

  async getEndpoint(accountId: string, id: string, unit?: Unit): Promise<WebhookEndpoint | undefined> {
    const row = await readerOf(this.store, unit).first(this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('account_id', '=', accountId));
    return row && toEndpoint(row);
  }

  updateEndpoint(unit: Unit, accountId: string, id: string, f: EndpointFields): Promise<number> {
    const set: Updateable<WebhookEndpointsTable> = {};
    if (f.url !== undefined) set.url = f.url;
    if (f.description !== undefined) set.description = f.description;
    if (f.events !== undefined) set.events = JSON.stringify(f.events);
    // Enabling again starts with a clean slate: the 24-hour failure clock restarts.
    if (f.enabled !== undefined) Object.assign(set, { enabled: flag(f.enabled), disabled_at: null, failing_since: null });
    return executorOf(unit).run(this.db.updateTable('webhook_endpoints').set(set).where('id', '=', id).where('account_id', '=', accountId));
  }

  deleteEndpoint(unit: Unit, accountId: string, id: string): Promise<number> {
    return executorOf(unit).run(this.db.deleteFrom('webhook_endpoints').where('id', '=', id).where('account_id', '=', accountId));
  }

  async eventEndpoints(unit: Unit, accountId: string): Promise<Pick<WebhookEndpoint, 'id' | 'events' | 'enabled'>[]> {
    const rows = await executorOf(unit).all(this.q.endpoints.bind({ account: accountId }));
    return rows.map((r) => ({ id: r.id, events: JSON.parse(r.events) as string[], enabled: bool(r.enabled) }));
  }

  async insertDeliveries(unit: Unit, deliveries: NewDelivery[]): Promise<void> {
    const tx = executorOf(unit);
    for (const d of deliveries) {
      await tx.run(this.q.insertDelivery.bind({ id: d.id, endpoint: d.endpointId, account: d.accountId, event: d.eventId, type: d.eventType, body: d.body, at: d.createdAt }));
    }
  }

  async listDeliveries(accountId: string, endpointId: string, { limit, before }: { limit: number; before?: string }): Promise<DeliveryWithAttempts[]> {
    const rows = await this.store.read.all(
      this.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'endpoint_id', 'event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'next_attempt_at', 'delivered_at', 'created_at'])
        .where('endpoint_id', '=', endpointId)
        .where('account_id', '=', accountId)
        .$if(before !== undefined, (q) => q.where('id', '<', before!))
        .orderBy('id', 'desc')
        .limit(limit),
    );
    if (rows.length === 0) return [];
    const attempts = await this.store.read.all(
      this.db
        .selectFrom('webhook_attempts')
        .select(['delivery_id', 'attempted_at', 'status_code', 'duration_ms', 'success', 'error'])
        .where(
          'delivery_id',
          'in',
          rows.map((r) => r.id),
        )
        .orderBy('id'),
    );
    return rows.map((r) => ({
      ...toDelivery(r),
      log: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({ attemptedAt: Number(a.attempted_at), statusCode: a.status_code, durationMs: a.duration_ms, success: bool(a.success), error: a.error })),
    }));
  }

  async getDelivery(accountId: string, endpointId: string, deliveryId: string): Promise<DeliveryDetail | undefined> {
    const r = await this.store.read.first(
      this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', deliveryId).where('endpoint_id', '=', endpointId).where('account_id', '=', accountId),
    );
    if (!r) return undefined;
    const attempts = await this.store.read.all(this.db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', r.id).orderBy('id'));
    return {
      ...toDelivery(r),
      body: r.body,
      log: attempts.map(
        (a): AttemptExchange => ({
          attemptedAt: Number(a.attempted_at),
          statusCode: a.status_code,
          durationMs: a.duration_ms,
          success: bool(a.success),
          error: a.error,
          requestHeaders: a.request_headers === null ? null : (JSON.parse(a.request_headers) as Record<string, string>),
          response:
            a.response_headers === null ? null : { headers: JSON.parse(a.response_headers) as Record<string, string>, body: a.response_body ?? '', truncated: bool(a.response_truncated) },
        }),
      ),
    };
  }

  async getDeliveryBody(unit: Unit, accountId: string, endpointId: string, deliveryId: string) {
    const row = await executorOf(unit).first(
      this.db
        .selectFrom('webhook_deliveries')
        .select(['event_id', 'event_type', 'body'])
        .where('id', '=', deliveryId)
        .where('endpoint_id', '=', endpointId)
        .where('account_id', '=', accountId),
    );
    return row && { eventId: row.event_id, eventType: row.event_type, body: row.body };
  }

  async loadTarget(deliveryId: string): Promise<DeliveryTarget | undefined> {
    const row = await this.store.read.first(this.q.target.bind({ delivery: deliveryId }));
    return (
      row && {
        deliveryId: row.id,
        eventId: row.event_id,
        eventType: row.event_type,
        body: row.body,
        endpointId: row.endpoint_id,
        accountId: row.account_id,
        url: row.url,
        secretSealed: row.secret_sealed,
        enabled: bool(row.enabled),
      }
    );
  }

  async recordAttempt(unit: Unit, o: AttemptOutcome): Promise<void> {
    const tx = executorOf(unit);
    await tx.run(
      this.q.insertAttempt.bind({
        id: timeOrderedId(o.attemptedAt),
        delivery: o.deliveryId,
        at: o.attemptedAt,
        code: o.statusCode,
        ms: o.durationMs,
        success: flag(o.success),
        error: o.error?.slice(0, 500) ?? null,
        requestHeaders: o.requestHeaders && JSON.stringify(o.requestHeaders),
        responseHeaders: o.response && JSON.stringify(o.response.headers),
        responseBody: o.response?.body ?? null,
        truncated: flag(o.response?.truncated ?? false),
      }),
    );
    await tx.run(this.q.outcome.bind({ delivery: o.deliveryId, status: o.status, code: o.statusCode, next: o.nextAttemptAt, delivered: o.success ? o.attemptedAt : null }));
  }

  async clearFailing(unit: Unit, endpointId: string): Promise<void> {
    await executorOf(unit).run(this.q.clearFailing.bind({ endpoint: endpointId }));
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
      // Ids sort by time: the oldest deliveries are the start of the primary key.
      const old = this.db.selectFrom('webhook_deliveries').select('id').where('id', '<', `wd_${timeOrderedFloor(before)}`).limit(PURGE_CHUNK);
      const n = await this.store.write((tx) => tx.run(this.db.deleteFrom('webhook_deliveries').where('id', 'in', old)));
      total += n;
      if (n < PURGE_CHUNK) return total;
    }
  }
}

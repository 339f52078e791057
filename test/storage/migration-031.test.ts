import { afterAll, beforeAll, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/core/ids.ts';
import { SqlWebhookRepository } from '../../src/modules/webhooks/repository.ts';
import { newDeliveryId } from '../../src/modules/webhooks/service.ts';
import type { Store } from '../../src/storage/index.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

const NOW = Date.now();
const OLD = newDeliveryId(NOW - 40 * 86_400_000);

// Attempts keep their request and answer (issue 36): rows from before read as "not kept", and go with their delivery.
forEachStore('migration 031: what each webhook attempt sent and got back', (kind) => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    database = await createDatabaseAt(kind, '024_members', async (db) => {
      await db.insertInto('accounts').values({ id: 'acc1', email: 'a@example.com', password_hash: 'x', plan: 'free', created_at: NOW }).execute();
      await db
        .insertInto('webhook_endpoints')
        .values({ id: 'we_1', account_id: 'acc1', url: 'https://example.com/h', description: null, events: '["*"]', secret_sealed: 's', enabled: 1, disabled_at: null, failing_since: null, created_at: NOW })
        .execute();
      await db
        .insertInto('webhook_deliveries')
        .values({ id: OLD, endpoint_id: 'we_1', account_id: 'acc1', event_id: 'evt_1', event_type: 'license.created', body: '{}', status: 'failed', attempts: 1, last_status_code: 500, next_attempt_at: null, delivered_at: null, created_at: NOW - 40 * 86_400_000 })
        .execute();
      await db.insertInto('webhook_attempts').values({ id: timeOrderedId(NOW), delivery_id: OLD, attempted_at: NOW, status_code: 500, duration_ms: 3, success: 0, error: 'HTTP 500' }).execute();
    });
    store = await database.open(); // runs migration 031
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('an attempt from before shows no request or answer; a new one keeps both', async () => {
    const repo = new SqlWebhookRepository(store);
    const before = await repo.getDelivery('acc1', 'we_1', OLD);
    expect(before!.log).toEqual([{ attemptedAt: NOW, statusCode: 500, durationMs: 3, success: false, error: 'HTTP 500', requestHeaders: null, response: null }]);
    const response = { headers: { 'content-type': 'text/plain' }, body: 'nope', truncated: true };
    await new StoreUnits(store, new EventBus()).run((unit) =>
      repo.recordAttempt(unit, { deliveryId: OLD, attemptedAt: NOW + 1, statusCode: 503, durationMs: 4, success: false, error: 'HTTP 503', requestHeaders: { 'tessera-event-id': 'evt_1' }, response, status: 'failed', nextAttemptAt: null }),
    );
    const after = await repo.getDelivery('acc1', 'we_1', OLD);
    expect(after!.log[1]).toMatchObject({ requestHeaders: { 'tessera-event-id': 'evt_1' }, response });
    expect(await repo.getDelivery('other', 'we_1', OLD)).toBeUndefined();
  });

  it('the retention purge takes the attempts with their delivery', async () => {
    const repo = new SqlWebhookRepository(store);
    expect(await repo.purgeDeliveries(NOW - 30 * 86_400_000)).toBe(1);
    expect(await store.read.all(store.db.selectFrom('webhook_attempts').select('id').where('delivery_id', '=', OLD))).toEqual([]);
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqlOfferRepository } from '../../src/modules/offers/repository.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import type { Store } from '../../src/storage/index.ts';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

// Upgrade offers gain entitlements; offers made before keep their meaning (null: the license's own stay).
forEachStore('migration 025: offers.entitlements', (kind) => {
  let database: TestDatabase;
  let store: Store;
  // The raw SQLite binding takes no booleans (the store's columns hold 0 and 1 there).
  const bool = (v: boolean) => (kind === 'sqlite' ? Number(v) : v);
  beforeAll(async () => {
    database = await createDatabaseAt(kind, '024_members', async (db) => {
      await db.insertInto('accounts').values({ id: 'acc_1', email: 'owner@example.com', password_hash: 'x', created_at: 1 }).execute();
      await db.insertInto('products').values({ id: 'p_1', account_id: 'acc_1', name: 'App', portal_show: bool(true), portal_allow_device_reset: bool(true), has_image: bool(false), fallback_enabled: bool(false), created_at: 1 }).execute();
      await db
        .insertInto('offers')
        .values({ id: 'off_old', account_id: 'acc_1', product_id: 'p_1', kind: 'upgrade', name: 'More seats', provider: 'stripe', price_id: 'price_old', extend_days: null, target_product_id: null, max_devices: 5, license_type: null, created_at: 1 })
        .execute();
    });
    store = await database.open(); // runs migration 025
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('an offer made before lists with entitlements null; a new one stores its set', async () => {
    const repo = new SqlOfferRepository(store);
    expect(await repo.list('acc_1', 'p_1')).toMatchObject([{ id: 'off_old', maxDevices: 5, entitlements: null }]);
    await new StoreUnits(store, new EventBus()).run((unit) =>
      repo.insert(unit, { id: 'off_new', accountId: 'acc_1', productId: 'p_1', kind: 'upgrade', name: 'Pro', provider: 'stripe', priceId: 'price_new', extendDays: null, targetProductId: null, maxDevices: null, licenseType: null, entitlements: ['pro', 'export.pdf'], createdAt: 2 }),
    );
    expect((await repo.list('acc_1', 'p_1')).map((o) => o.entitlements)).toEqual([null, ['pro', 'export.pdf']]);
  });
});

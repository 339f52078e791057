import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import type { Store } from '../../src/storage/index.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

const NOW = 1_700_000_000_000;

// SQLite: a device row holds its search row's id, the (license_key, device) index is gone; rows from
// before keep being found and are taken out with their device. PostgreSQL: the GIN pending lists bounded.
forEachStore('migration 034: search rows found by id, pending lists bounded', (kind) => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    // Booleans as each store's raw driver takes them.
    const b = (v: boolean) => (kind === 'sqlite' ? Number(v) : v);
    database = await createDatabaseAt(kind, '032_branding_team_log', async (db) => {
      await db.insertInto('accounts').values({ id: 'acc1', email: 'a@example.com', password_hash: 'x', plan: 'free', created_at: NOW }).execute();
      await db.insertInto('products').values({ id: 'p1', account_id: 'acc1', name: 'P', portal_show: b(true), portal_allow_device_reset: b(false), has_image: b(false), fallback_enabled: b(false), created_at: NOW }).execute();
      for (const [key, email] of [['AAAAA-11111', 'jo@acme.com'], ['BBBBB-22222', 'max@other.org']]) {
        await db.insertInto('licenses').values({ key, account_id: 'acc1', product_id: 'p1', type: 'perpetual', expires_at: null, revoked: b(false), email, email_normalized: email, max_devices: 3, created_at: NOW }).execute();
      }
      await db.insertInto('devices').values({ license_key: 'AAAAA-11111', identifier: 'MAC-old', name: 'Old MacBook', activation_date: NOW }).execute();
      await db.insertInto('devices').values({ license_key: 'BBBBB-22222', identifier: 'PC-kept', name: 'Desk', activation_date: NOW }).execute();
    });
    store = await database.open(); // runs migration 034
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('keeps finding rows from before, and follows device and license changes', async () => {
    const repo = new SqlLicenseRepository(store);
    const find = async (piece: string) => (await repo.search('acc1', { contains: piece }, NOW, { limit: 10 })).map((l) => l.key);
    expect(await find('macbook')).toEqual(['AAAAA-11111']);
    expect(await find('pc-kept')).toEqual(['BBBBB-22222']);
    const db = store.db as any;
    await store.write(async (tx) => {
      await tx.run(db.deleteFrom('devices').where('identifier', '=', 'MAC-old'));
      await tx.run(db.insertInto('devices').values({ license_key: 'AAAAA-11111', identifier: 'MAC-new', name: 'New MacBook', activation_date: NOW }));
      await tx.run(db.updateTable('devices').set({ name: 'Studio' }).where('identifier', '=', 'PC-kept'));
    });
    expect(await find('old macbook')).toEqual([]);
    expect(await find('new macbook')).toEqual(['AAAAA-11111']);
    expect(await find('desk')).toEqual([]);
    expect(await find('studio')).toEqual(['BBBBB-22222']);
    await new StoreUnits(store, new EventBus()).run((unit) => repo.delete(unit, 'BBBBB-22222'));
    expect(await find('studio')).toEqual([]);
    expect(await find('other.org')).toEqual([]);
    if (kind === 'sqlite') {
      const rows = await store.read.all<{ license_key: string; device: string }>(sql`SELECT license_key, device FROM license_search ORDER BY id`.compile(db));
      expect(rows).toEqual([{ license_key: 'AAAAA-11111', device: '' }, { license_key: 'AAAAA-11111', device: 'MAC-new' }]);
      const ids = await store.read.all<{ search_id: number; id: number }>(sql`SELECT d.search_id, s.id FROM devices d JOIN license_search s ON s.license_key = d.license_key AND s.device = d.identifier`.compile(db));
      expect(ids.every((r) => r.search_id === r.id)).toBe(true);
      const indexes = await store.read.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'license_search' ORDER BY name`.compile(db));
      expect(indexes.map((i) => i.name)).toEqual(['license_search_license']);
    }
  });

  it('PostgreSQL: each trigram index keeps at most 1 MB pending', async () => {
    if (kind !== 'postgres') return;
    const rows = await store.read.all<{ relname: string; reloptions: string[] }>(
      sql`SELECT relname, reloptions FROM pg_class WHERE relname IN ('licenses_email_trgm', 'licenses_key_trgm', 'devices_search_trgm') ORDER BY relname`.compile(store.db),
    );
    expect(rows).toEqual(['devices_search_trgm', 'licenses_email_trgm', 'licenses_key_trgm'].map((relname) => ({ relname, reloptions: ['gin_pending_list_limit=1024'] })));
  });
});

import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { flag } from '../../src/storage/schema.ts';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import type { LicenseFilter } from '../../src/modules/licenses/types.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';

/** Migration 029's substring search, through the repository: what it finds, and that it stays in step with writes. */
forEachStore('license substring search', (kind) => {
  it('finds by address piece, domain, key piece, device identifier and name; follows edits and deletes; keeps tenants apart', async () => {
    const database = await createTestDatabase(kind);
    const store = await database.open();
    try {
      const repo = new SqlLicenseRepository(store);
      const db = store.db as any;
      const now = 1_700_000_000_000;
      await store.write(async (tx) => {
        for (const id of ['acc_a', 'acc_b']) {
          await tx.run(db.insertInto('accounts').values({ id, email: `${id}@example.com`, password_hash: 'x', created_at: now }));
          await tx.run(db.insertInto('products').values({ id: `p_${id}`, account_id: id, name: 'P', portal_show: flag(true), portal_allow_device_reset: flag(false), has_image: flag(false), fallback_enabled: flag(false), created_at: now }));
        }
        const license = (key: string, account: string, email: string | null, created: number) =>
          db.insertInto('licenses').values({ key, account_id: account, product_id: `p_${account}`, type: 'perpetual', expires_at: null, revoked: flag(false), email, email_normalized: email?.toLowerCase() ?? null, max_devices: 3, created_at: created });
        await tx.run(license('AAAAA-11111', 'acc_a', 'Jo@Acme.com', now - 3));
        await tx.run(license('BBBBB-22222', 'acc_a', 'max@other.org', now - 2));
        await tx.run(license('CCCCC-33333', 'acc_a', null, now - 1));
        await tx.run(license('DDDDD-44444', 'acc_b', 'eve@acme.com', now));
        await tx.run(db.insertInto('devices').values({ license_key: 'CCCCC-33333', identifier: 'MAC-9f8e7d', name: "Ada's MacBook", activation_date: now }));
      });
      const find = async (contains: string, f: LicenseFilter = {}) =>
        (await repo.search('acc_a', { ...f, contains }, now, { limit: 10 })).map((l) => l.key);

      expect(await find('@acme.com')).toEqual(['AAAAA-11111']);
      expect(await find('jo@ac')).toEqual(['AAAAA-11111']);
      expect(await find('bbb-2')).toEqual(['BBBBB-22222']);
      expect(await find('9f8e7d')).toEqual(['CCCCC-33333']);
      expect(await find('macbook')).toEqual(['CCCCC-33333']);
      expect(await find('%')).toEqual([]);
      expect(await find('a_a')).toEqual([]);
      expect(await find('o@acme', { sort: 'oldest' })).toEqual(['AAAAA-11111']);
      expect(await repo.countMatches('acc_a', { contains: 'acme' }, now, 10)).toBe(1);
      expect(await repo.countMatches('acc_a', {}, now, 1)).toBe(2);

      // A re-key moves the license and its devices: both found under the new key, nothing under the old.
      await new StoreUnits(store, new EventBus()).run((unit) => repo.rekey(unit, 'CCCCC-33333', 'EEEEE-55555'));
      expect(await find('macbook')).toEqual(['EEEEE-55555']);
      expect(await find('ccccc')).toEqual([]);
      expect(await find('eeeee')).toEqual(['EEEEE-55555']);
      await store.write(async (tx) => {
        await tx.run(db.updateTable('licenses').set({ email: 'new@acme.com', email_normalized: 'new@acme.com' }).where('key', '=', 'BBBBB-22222'));
        await tx.run(db.deleteFrom('devices').where('license_key', '=', 'EEEEE-55555'));
        await tx.run(db.deleteFrom('licenses').where('key', '=', 'AAAAA-11111'));
      });
      expect(await find('acme.com')).toEqual(['BBBBB-22222']);
      expect(await find('other.org')).toEqual([]);
      expect(await find('macbook')).toEqual([]);
      if (kind === 'sqlite') expect(await store.read.all(sql`SELECT count(*) AS n FROM license_search`.compile(db))).toEqual([{ n: 3 }]);
    } finally {
      await store.close();
      await database.drop();
    }
  });
});

import { describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { flag } from '../../src/storage/schema.ts';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import type { LicenseFilter } from '../../src/modules/licenses/types.ts';
import type { Executor, Store } from '../../src/storage/index.ts';
import { createTestDatabase, forEachStore, type StoreKind } from '../support/stores.ts';

/** A store of `kind` for one test, closed and dropped after it. */
async function withStore(kind: StoreKind, body: (store: Store) => Promise<void>): Promise<void> {
  const database = await createTestDatabase(kind);
  const store = await database.open();
  try {
    await body(store);
  } finally {
    await store.close();
    await database.drop();
  }
}

/** Account `id` and its product `p_<id>`. */
async function insertTenant(db: any, tx: Executor, id: string, now: number): Promise<void> {
  await tx.run(db.insertInto('accounts').values({ id, email: `${id}@example.com`, password_hash: 'x', created_at: now }));
  await tx.run(db.insertInto('products').values({ id: `p_${id}`, account_id: id, name: 'P', portal_show: flag(true), portal_allow_device_reset: flag(false), has_image: flag(false), fallback_enabled: flag(false), created_at: now }));
}

/** Migration 029's substring search, through the repository: what it finds, and that it stays in step with writes. */
forEachStore('license substring search', (kind) => {
  it('finds by address piece, domain, key piece, device identifier and name; follows edits and deletes; keeps tenants apart', async () => {
    await withStore(kind, async (store) => {
      const repo = new SqlLicenseRepository(store);
      const db = store.db as any;
      const now = 1_700_000_000_000;
      await store.write(async (tx) => {
        for (const id of ['acc_a', 'acc_b']) {
          await insertTenant(db, tx, id, now);
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

      // SQLite: so far the rows were read past the FTS5 index's watermark; from here they are indexed,
      // so the changes below leave entries of deleted rows in the index until the indexer's next batch.
      if (kind === 'sqlite') expect(await (store as any).searchIndex.runOnce()).toBe(false);
      expect(await find('@acme.com')).toEqual(['AAAAA-11111']);
      expect(await find('macbook')).toEqual(['CCCCC-33333']);

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
      if (kind === 'sqlite') {
        // The FTS5 index follows in batches: what the writes above left is found the same once indexed,
        // the deleted and replaced rows' entries are taken out (their tombstones), and nothing lingers.
        const indexer = (store as any).searchIndex;
        await indexer.runOnce();
        expect(await find('acme.com')).toEqual(['BBBBB-22222']);
        expect(await find('other.org')).toEqual([]);
        expect(await find('macbook')).toEqual([]);
        expect(await find('bbb-2')).toEqual(['BBBBB-22222']);
        const count = async (q: string) => (await store.read.all<{ n: number }>(sql.raw(q).compile(db)))[0]!.n;
        expect(await count('SELECT count(*) AS n FROM license_search_tombstones')).toBe(0);
        const inIndex = (piece: string) => count(`SELECT count(*) AS n FROM license_search_fts WHERE license_search_fts MATCH '"${piece}"'`);
        expect(await inIndex('acme')).toBe(2); // BBBBB's new address and the other account's
        expect(await inIndex('other.org')).toBe(0); // BBBBB's old address: its tombstone took it out
        expect(await inIndex('macbook')).toBe(0);
        expect(await inIndex('ccccc')).toBe(0);
        expect(await count('SELECT count(*) AS n FROM license_search WHERE id > (SELECT indexed_through FROM license_search_state)')).toBe(0);
        expect(await indexer.runOnce()).toBe(false);
      }
    });
  });
});

/**
 * A search by a piece of text first walks a window of the order's index, testing each row (a dense
 * piece fills the page there), and turns to the trigram index when the window holds fewer matches
 * than the page: pages both ways are the same whichever path serves them.
 */
forEachStore('license substring search, walk and index paths', (kind) => {
  it('pages forward and back in every order alike whatever the window, and takes the walk when matches are dense', async () => {
    await withStore(kind, async (store) => {
      const db = store.db as any;
      const now = 1_700_000_000_000;
      type Row = { key: string; email: string; created: number; expires: number | null; revoked: boolean; device?: string };
      const rows: Row[] = [];
      for (let i = 0; i < 24; i++) {
        // Most addresses at acme (dense), a few at zeta (sparse: two of them, and one device name).
        const domain = i % 9 === 4 ? 'zeta.io' : 'acme.com';
        // Creation times repeat (ties broken by key) and are not in key order.
        rows.push({ key: `K${String((i * 7) % 24).padStart(2, '0')}-${i}`, email: `c${i}@${domain}`, created: now - ((i * 5) % 8) * 1000, expires: i % 4 === 1 ? now - i * 1000 : null, revoked: i % 6 === 5, device: i % 10 === 3 ? (i === 13 ? 'Zeta laptop' : 'Desk') : undefined });
      }
      await store.write(async (tx) => {
        for (const id of ['acc_a', 'acc_b']) {
          await insertTenant(db, tx, id, now);
        }
        for (const r of rows) {
          await tx.run(db.insertInto('licenses').values({ key: r.key, account_id: 'acc_a', product_id: 'p_acc_a', type: r.expires === null ? 'perpetual' : 'timed', expires_at: r.expires, revoked: flag(r.revoked), email: r.email, email_normalized: r.email, max_devices: 3, created_at: r.created }));
          if (r.device) await tx.run(db.insertInto('devices').values({ license_key: r.key, identifier: `dev-${r.key}`, name: r.device, activation_date: now }));
        }
        // Another account's zeta licenses: never in acc_a's pages, whichever path.
        await tx.run(db.insertInto('licenses').values({ key: 'ZZ-other', account_id: 'acc_b', product_id: 'p_acc_b', type: 'perpetual', expires_at: null, revoked: flag(false), email: 'x@zeta.io', email_normalized: 'x@zeta.io', max_devices: 3, created_at: now }));
      });
      const contains = (r: Row, piece: string) => r.email.includes(piece) || r.key.toLowerCase().includes(piece) || (r.device !== undefined && (`dev-${r.key}`.toLowerCase().includes(piece) || r.device.toLowerCase().includes(piece)));
      const cases: [LicenseFilter, (r: Row) => boolean, (a: Row, b: Row) => number, (r: Row) => number | null][] = [];
      const byKey = (a: Row, b: Row) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
      for (const piece of ['acme', 'zeta', 'k1']) {
        const has = (r: Row) => contains(r, piece);
        cases.push([{ contains: piece }, has, (a, b) => b.created - a.created || byKey(b, a), (r) => r.created]);
        cases.push([{ contains: piece, sort: 'oldest' }, has, (a, b) => a.created - b.created || byKey(a, b), (r) => r.created]);
        cases.push([{ contains: piece, sort: 'key' }, has, byKey, () => null]);
        cases.push([{ contains: piece, status: 'revoked' }, (r) => has(r) && r.revoked, (a, b) => b.created - a.created || byKey(b, a), (r) => r.created]);
        cases.push([{ contains: piece, status: 'expired' }, (r) => has(r) && !r.revoked && r.expires !== null, (a, b) => b.expires! - a.expires! || byKey(b, a), (r) => r.expires]);
      }
      for (const walkRows of [1, 2, 3, 5, 1000]) {
        const repo = new SqlLicenseRepository(store, { walkRows });
        for (const [filter, keep, order, sortOf] of cases) {
          const expected = rows.filter(keep).sort(order).map((r) => r.key);
          const position = (key: string) => ({ sort: sortOf(rows.find((r) => r.key === key)!), key });
          const label = `${JSON.stringify(filter)} walking ${walkRows}`;
          // Forward, three at a time, then back from the end.
          const forward: string[] = [];
          let after: ReturnType<typeof position> | undefined;
          for (;;) {
            const page = (await repo.search('acc_a', filter, now, { limit: 3, after })).map((l) => l.key);
            forward.push(...page);
            if (page.length < 3) break;
            after = position(page[2]!);
          }
          expect(forward, label).toEqual(expected);
          const backward: string[] = [];
          let before = expected.length > 0 ? position(expected[expected.length - 1]!) : undefined;
          while (before) {
            const page = (await repo.search('acc_a', filter, now, { limit: 3, before })).map((l) => l.key);
            backward.unshift(...page);
            before = page.length === 3 ? position(page[0]!) : undefined;
          }
          expect(backward, label).toEqual(expected.slice(0, -1));
          // The capped count, walked or through the index: exact up to the cap, then cap + 1.
          for (const cap of [1, 2, 4, 100]) expect(await repo.countMatches('acc_a', filter, now, cap), `${label}, cap ${cap}`).toBe(Math.min(expected.length, cap + 1));
        }
      }
      // Which path served: with a window of 6, "acme" (most rows) fills a page of 3 in the walk.
      if (kind === 'sqlite') await (store as any).searchIndex.catchUp();
      const repo = new SqlLicenseRepository(store, { walkRows: 6 });
      const paths = vi.spyOn(repo.searching, 'searchQuery');
      await repo.search('acc_a', { contains: 'acme' }, now, { limit: 3 });
      expect(paths.mock.calls.map((c) => (c[3].walk ? 'walk' : 'index'))).toEqual(['walk']);
      // The count walks the key's index when its first rows match densely: "acme" (20 of 24) is
      // counted without the trigram index; "zeta" goes through it.
      const counted = vi.spyOn(repo.searching as any, 'countIn');
      expect(await repo.countMatches('acc_a', { contains: 'acme' }, now, 2)).toBe(3);
      expect(counted).not.toHaveBeenCalled();
      expect(await repo.countMatches('acc_a', { contains: 'zeta' }, now, 5)).toBe(3);
      expect(counted).toHaveBeenCalledTimes(1);
    });
  });

  it('folds case in every script on every path: the walk, the index, and rows the index has yet to take', async () => {
    await withStore(kind, async (store) => {
      const db = store.db as any;
      const now = 1_700_000_000_000;
      await store.write(async (tx) => {
        await insertTenant(db, tx, 'acc_a', now);
        for (const [key, identifier, name] of [['K-1', 'ÉCRAN-7', "Ölaf's Laptop"], ['K-2', 'desk-2', 'Desk']]) {
          await tx.run(db.insertInto('licenses').values({ key, account_id: 'acc_a', product_id: 'p_acc_a', type: 'perpetual', expires_at: null, revoked: flag(false), email: null, email_normalized: null, max_devices: 3, created_at: now }));
          await tx.run(db.insertInto('devices').values({ license_key: key, identifier, name, activation_date: now }));
        }
      });
      const found = async (repo: SqlLicenseRepository, piece: string) => [(await repo.search('acc_a', { contains: piece }, now, { limit: 5 })).map((l) => l.key), await repo.countMatches('acc_a', { contains: piece }, now, 100)];
      // A window of 1 row makes every piece walk (SQLite: FTS5 never has "fewer than 1"); 1,000, the index.
      // On SQLite the rows are first past the FTS5 index's watermark (read directly), then indexed.
      for (const indexed of kind === 'sqlite' ? [false, true] : [true]) {
        if (indexed && kind === 'sqlite') await (store as any).searchIndex.catchUp();
        for (const walkRows of [1, 1000]) {
          const repo = new SqlLicenseRepository(store, { walkRows });
          for (const piece of ['ölaf', 'écran-7', "f's lap"]) expect(await found(repo, piece), `${piece}, window ${walkRows}, indexed ${indexed}`).toEqual([['K-1'], 1]);
        }
      }
    });
  });

  it("walks a second window sized by the first one's matches, and leaves the rest to the index", async () => {
    await withStore(kind, async (store) => {
      const db = store.db as any;
      const now = 1_700_000_000_000;
      // Forty licenses, newest first in index order i = 0..39: "mid" in every fourth (i = 0, 4, 8...),
      // "rare" in two (i = 0 and 30), "late" in one (i = 39).
      const mark = (i: number) => [i % 4 === 0 && 'mid', (i === 0 || i === 30) && 'rare', i === 39 && 'late'].filter(Boolean).join('-') || 'x';
      await store.write(async (tx) => {
        await insertTenant(db, tx, 'acc_a', now);
        for (let i = 0; i < 40; i++) {
          const email = `c${i}-${mark(i)}@shop.test`;
          await tx.run(db.insertInto('licenses').values({ key: `K-${String(i).padStart(2, '0')}`, account_id: 'acc_a', product_id: 'p_acc_a', type: 'perpetual', expires_at: null, revoked: flag(false), email, email_normalized: email, max_devices: 3, created_at: now - i * 1000 }));
        }
        // The oldest has no address; its device's name finds it (through the index: nothing in the first window).
        await tx.run(db.insertInto('licenses').values({ key: 'K-40', account_id: 'acc_a', product_id: 'p_acc_a', type: 'perpetual', expires_at: null, revoked: flag(false), email: null, email_normalized: null, max_devices: 3, created_at: now - 40 * 1000 }));
        await tx.run(db.insertInto('devices').values({ license_key: 'K-40', identifier: 'box-1', name: 'Nomail box', activation_date: now }));
      });
      if (kind === 'sqlite') await (store as any).searchIndex.catchUp();
      const repo = new SqlLicenseRepository(store, { walkRows: 4 });
      const paths = vi.spyOn(repo.searching, 'searchQuery');
      const page = async (piece: string) => {
        paths.mockClear();
        const keys = (await repo.search('acc_a', { contains: piece }, now, { limit: 3 })).map((l) => l.key);
        return { keys, paths: paths.mock.calls.map((c) => (c[3].walk ? 'walk' : c[3].ids ? 'ids' : 'index')) };
      };
      // "mid": the first window (i = 0..3) holds one match of three; a second of 1.5 × 2 × 4 = 12 rows
      // (i = 4..15) holds the other two: no trigram index.
      expect(await page('mid')).toEqual({ keys: ['K-00', 'K-04', 'K-08'], paths: ['walk', 'walk'] });
      // "rare": one in the first window, none in the second; the index serves the page. On SQLite
      // FTS5 has already said that "rare" has fewer entries than the window: its ids serve the page.
      expect(await page('rare')).toEqual({ keys: ['K-00', 'K-30'], paths: kind === 'sqlite' ? ['ids'] : ['walk', 'walk', 'index'] });
      // "late": none in the first window, so no density to size a second one by.
      expect(await page('late')).toEqual({ keys: ['K-39'], paths: kind === 'sqlite' ? ['ids'] : ['walk', 'index'] });
      expect(await page('nomail')).toEqual({ keys: ['K-40'], paths: kind === 'sqlite' ? ['ids'] : ['walk', 'index'] });
      expect(await repo.countMatches('acc_a', { contains: 'nomail' }, now, 100)).toBe(1);
      // Backwards from the end, "mid" alike: i = 39..36 hold one (36), then 12 rows (35..24) two more.
      paths.mockClear();
      const back = (await repo.search('acc_a', { contains: 'mid' }, now, { limit: 3, before: { sort: now - 40 * 1000, key: 'K-40' } })).map((l) => l.key);
      expect(back).toEqual(['K-28', 'K-32', 'K-36']);
      expect(paths.mock.calls.map((c) => (c[3].walk ? 'walk' : 'index'))).toEqual(['walk', 'walk']);
      // The count of a piece FTS5 found few of is served by the same ids (SQLite), without a walk.
      const walkedCount = vi.spyOn(repo.searching as any, 'countByWalk');
      expect(await repo.countMatches('acc_a', { contains: 'rare' }, now, 100)).toBe(2);
      expect(walkedCount).toHaveBeenCalledTimes(kind === 'sqlite' ? 0 : 1);
      expect(await repo.countMatches('acc_a', { contains: 'mid' }, now, 100)).toBe(10);
      // A page and its count asked together (as the dashboard does) share one read of FTS5's lists.
      const reads = vi.spyOn(store.read, 'all');
      const [rare, rareCount] = await Promise.all([repo.search('acc_a', { contains: 'rare' }, now, { limit: 3 }), repo.countMatches('acc_a', { contains: 'rare' }, now, 100)]);
      expect([rare.length, rareCount]).toEqual([2, 2]);
      const ftsReads = reads.mock.calls.filter(([q]) => /MATCH/.test((q as { sql: string }).sql ?? String(q)));
      expect(ftsReads).toHaveLength(kind === 'sqlite' ? 1 : 0);
    });
  });
});

import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/storage/sqlite.ts';
import { StatementCache } from '../../src/storage/statement-cache.ts';
import { useTempDirs } from '../support/temp-dirs.ts';

const tempDir = useTempDirs('tessera-statements-');

describe('StatementCache', () => {
  const entry = () => ({ used: false });

  it('keeps what was used since the last sweep and evicts the one-off texts', () => {
    const cache = new StatementCache(4);
    const hot = cache.get('hot', entry);
    for (let i = 0; i < 100; i++) {
      cache.get(`one-off ${i}`, entry);
      expect(cache.get('hot', entry)).toBe(hot);
    }
    const { cached, prepared, evicted } = cache.stats();
    expect(prepared).toBe(101); // the hot text once, each one-off once
    expect(cached).toBeLessThanOrEqual(4);
    expect(evicted).toBe(prepared - cached);
  });

  it('evicts the older half when every entry was used since the last sweep', () => {
    const cache = new StatementCache(4);
    for (const sql of ['a', 'b', 'c', 'd']) cache.get(sql, entry);
    cache.get('e', entry); // first sweep: none used since they were prepared, so all four go
    expect(cache.stats()).toEqual({ cached: 1, prepared: 5, evicted: 4 });
    for (const sql of ['f', 'g', 'h']) cache.get(sql, entry);
    for (const sql of ['e', 'f', 'g', 'h']) cache.get(sql, entry); // all used
    cache.get('i', entry);
    expect(cache.stats()).toEqual({ cached: 3, prepared: 9, evicted: 6 });
    const again = { used: false };
    expect(cache.get('e', () => again)).toBe(again); // the oldest: gone, prepared anew
    expect(cache.get('h', entry).used).toBe(true); // kept, marked by this hit
  });
});

describe('SqliteStore statement cache', () => {
  let store: SqliteStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('keeps the statements in use while more distinct texts than it holds go through', async () => {
    store = await SqliteStore.open(tempDir());
    const hot = sql<{ n: number }>`select count(*) as n from licenses where key = ${'K'}`.compile(store.db);
    await store.read.first(hot);
    const start = store.statementCache();
    // Three times the cache's size in one-off texts (a literal in the SQL text), the hot one between each.
    for (let i = 0; i < 1500; i++) {
      await store.read.first(sql.raw<{ n: number }>(`select ${i} as n`).compile(store.db));
      await store.read.first(hot);
    }
    const end = store.statementCache();
    // Each one-off prepared once; the hot statement never again (a wholesale clear re-prepared it three times).
    expect(end.prepared - start.prepared).toBe(1500);
    expect(end.evicted).toBeGreaterThanOrEqual(1000);
    expect(end.cached).toBeLessThanOrEqual(500);
  });
});

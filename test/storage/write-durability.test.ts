import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../src/storage/sqlite.ts';
import { createTestDatabase, type TestDatabase } from '../support/stores.ts';

const pragma = (store: SqliteStore) => (store as unknown as { conn: { pragma(p: string, o: object): unknown } }).conn.pragma('synchronous', { simple: true });

describe('SQLite units that need no fsync (WriteOptions.durable: false)', () => {
  const ctx = {} as { database: TestDatabase; store: SqliteStore };
  beforeAll(async () => {
    ctx.database = await createTestDatabase('sqlite');
    ctx.store = (await ctx.database.open()) as SqliteStore;
  });
  afterAll(async () => {
    await ctx.store?.close();
    await ctx.database?.drop();
  });

  it('commit in a batch of their own, first, without the fsync; durable units keep synchronous=FULL', async () => {
    const seen: string[] = [];
    const unit = (name: string) => async () => {
      seen.push(`${name}:${pragma(ctx.store)}`);
    };
    // Queued in one turn, mixed: the units that skip the fsync go first, in their own batch.
    await Promise.all([ctx.store.write(unit('durable')), ctx.store.write(unit('lazy'), { durable: false }), ctx.store.write(unit('durable2'))]);
    expect(seen).toEqual(['lazy:1', 'durable:2', 'durable2:2']);
    expect(pragma(ctx.store)).toBe(2);
  });

  it('are visible to reads once they resolve', async () => {
    const db = ctx.store.db;
    await ctx.store.write((tx) => tx.run(db.insertInto('accounts').values({ id: 'lazy-acc', email: 'lazy@example.com', password_hash: 'x', plan: 'free', created_at: 1 })), { durable: false });
    expect(await ctx.store.read.first(db.selectFrom('accounts').select('id').where('id', '=', 'lazy-acc'))).toEqual({ id: 'lazy-acc' });
  });
});

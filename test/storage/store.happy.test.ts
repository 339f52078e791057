import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../../src/storage/index.ts';
import type { WriteOptions } from '../../src/storage/store.ts';
import { createTestDatabase, forEachStore, type TestDatabase } from '../support/stores.ts';

// The executor contract the repositories rely on, on both stores. On SQLite reads share one
// read transaction per event-loop turn and rows are built from raw arrays: these cases pin down
// that neither changes what a caller sees.
forEachStore('store executor', (kind) => {
  let database: TestDatabase;
  let store: Store;
  let other: Store;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    store = await database.open();
    other = await database.open(); // a second process on the same data (the CLI, a second server)
  });

  afterAll(async () => {
    await other.close();
    await store.close();
    await database.drop();
  });

  const insertAccount = (s: Store, email: string, options?: WriteOptions) =>
    s.write((tx) => tx.run(s.db.insertInto('accounts').values({ id: randomUUID(), email, password_hash: 'x', plan: 'free', created_at: Date.now() })), options);
  const byEmail = (s: Store, email: string) => s.read.first(s.db.selectFrom('accounts').select(['email', 'plan as tier']).where('email', '=', email));

  it('answers a read and a write issued in the same turn, and the next read sees the write', async () => {
    const [before, changed] = await Promise.all([byEmail(store, 'same-turn@example.com'), insertAccount(store, 'same-turn@example.com')]);
    expect(before).toBeUndefined();
    expect(changed).toBe(1);
    expect(await byEmail(store, 'same-turn@example.com')).toEqual({ email: 'same-turn@example.com', tier: 'free' });
  });

  it('makes an acknowledged write visible to another process at once, while this one keeps reading', async () => {
    expect(await byEmail(store, 'seen@example.com')).toBeUndefined();
    await insertAccount(store, 'seen@example.com');
    expect(await byEmail(other, 'seen@example.com')).toMatchObject({ email: 'seen@example.com' });

    // The other way round: this process was reading in this turn; the other one writes.
    expect(await byEmail(store, 'from-other@example.com')).toBeUndefined();
    await insertAccount(other, 'from-other@example.com');
    await new Promise((resolve) => setImmediate(resolve));
    expect(await byEmail(store, 'from-other@example.com')).toMatchObject({ email: 'from-other@example.com' });
  });

  it('never shows a read the rows of a unit of work before they are committed', async () => {
    const email = (name: string) => `${name}-${randomUUID()}@example.com`;
    const [kept, undone] = [email('kept'), email('undone')];
    // Reads issued while the units run (as another request's would be, between their statements).
    // Named, not pushed: on PostgreSQL the two units run concurrently, in either order.
    const during: { kept?: Promise<unknown>; undone?: Promise<unknown> } = {};
    const committed = store.write(async (tx) => {
      await tx.run(store.db.insertInto('accounts').values({ id: randomUUID(), email: kept, password_hash: 'x', plan: 'free', created_at: 1 }));
      during.kept = byEmail(store, kept);
    });
    const rolledBack = store.write(async (tx) => {
      await tx.run(store.db.insertInto('accounts').values({ id: randomUUID(), email: undone, password_hash: 'x', plan: 'free', created_at: 1 }));
      during.undone = byEmail(store, undone);
      await tx.first(store.db.selectFrom('accounts').select('email').where('email', '=', undone)); // the unit sees its own row
      throw new Error('unit fails after its insert');
    });
    // Both settled together: a rejection left unobserved while awaiting the other is an unhandled one.
    const [first, second] = await Promise.allSettled([committed, rolledBack]);
    expect(first.status).toBe('fulfilled');
    expect(second).toMatchObject({ status: 'rejected', reason: { message: 'unit fails after its insert' } });
    const [keptSeen, undoneSeen] = await Promise.all([during.kept, during.undone]);
    // A read issued before a COMMIT may run before it (PostgreSQL) or wait for it (SQLite): either
    // nothing or the committed row. The row a rollback undid is never seen.
    expect([undefined, kept]).toContain((keptSeen as { email?: string } | undefined)?.email);
    expect(undoneSeen).toBeUndefined();
    expect(await byEmail(store, kept)).toMatchObject({ email: kept });
    expect(await byEmail(store, undone)).toBeUndefined();
  });

  it('makes a write with awaitSync: false visible to another process once answered; on PostgreSQL it alone commits asynchronously', async () => {
    expect(await insertAccount(store, 'unsynced@example.com', { awaitSync: false })).toBe(1);
    expect(await byEmail(other, 'unsynced@example.com')).toEqual({ email: 'unsynced@example.com', tier: 'free' });
    await new Promise((resolve) => setImmediate(resolve)); // ends `other`'s read of this turn (SQLite)
    if (kind !== 'postgres') return;
    const setting = (options?: WriteOptions) =>
      store.write((tx) => tx.first<{ v: string }>({ sql: "select current_setting('synchronous_commit') as v", parameters: [] }), options);
    expect((await setting({ awaitSync: false }))!.v).toBe('off');
    expect((await setting())!.v).toBe('on'); // SET LOCAL: the pooled connection is back to the default
  });

  it('commits a write run outside a unit of work before answering', async () => {
    const id = randomUUID();
    await byEmail(store, 'nobody@example.com'); // a read first, in this turn
    await store.read.run(store.db.insertInto('accounts').values({ id, email: 'outside@example.com', password_hash: 'x', plan: 'plus', created_at: 1 }));
    expect(await other.read.first(other.db.selectFrom('accounts').select('plan').where('id', '=', id))).toEqual({ plan: 'plus' });
  });

  it('returns every row as an object named by its columns and aliases, and nothing for no match', async () => {
    await insertAccount(store, 'rows-a@example.com');
    await insertAccount(store, 'rows-b@example.com');
    const rows = await store.read.all(
      store.db.selectFrom('accounts').select(['email as address', 'created_at']).where('email', 'like', 'rows-%').orderBy('email'),
    );
    expect(rows.map((r) => r.address)).toEqual(['rows-a@example.com', 'rows-b@example.com']);
    expect(typeof rows[0]!.created_at).toBe('number');
    expect(await store.read.all(store.db.selectFrom('accounts').selectAll().where('email', '=', 'none@example.com'))).toEqual([]);
  });

  if (kind === 'postgres')
    it('runs every pooled connection without JIT compilation or parallel workers (short statements: both cost more than they save)', async () => {
    const settings = () => store.read.first<{ jit: string; workers: string }>(sql`SELECT current_setting('jit') AS jit, current_setting('max_parallel_workers_per_gather') AS workers`.compile(store.db));
    // Several at once, so that more than one pooled connection answers.
    const seen = await Promise.all(Array.from({ length: 6 }, settings));
    expect(new Set(seen.map((s) => `${s!.jit} ${s!.workers}`))).toEqual(new Set(['off 0']));
  });

  if (kind === 'postgres')
    it("sends a unit's BEGIN with its first statement (pipelined: one round trip fewer), and the unit stays atomic", async () => {
      const query = pg.Client.prototype.query;
      const sent: { text: string; behind: string | undefined }[] = [];
      pg.Client.prototype.query = function (this: pg.Client & { _activeQuery: { text?: string } | null }, ...args: unknown[]) {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
        sent.push({ text, behind: this._activeQuery?.text });
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      const email = `pipelined-${randomUUID()}@example.com`;
      try {
        await insertAccount(store, email);
        await expect(
          store.write(async (tx) => {
            await tx.run(store.db.updateTable('accounts').set({ plan: 'plus' }).where('email', '=', email));
            await tx.run(store.db.insertInto('accounts').values({ id: randomUUID(), email, password_hash: 'x', plan: 'free', created_at: 1 })); // the address is taken
          }),
        ).rejects.toMatchObject({ code: '23505' });
      } finally {
        pg.Client.prototype.query = query;
      }
      expect(sent.find((s) => s.text.startsWith('update "accounts"'))).toEqual({ text: expect.any(String), behind: 'BEGIN' });
      expect(await byEmail(store, email)).toEqual({ email, tier: 'free' }); // the update went with the failed unit
    });

  if (kind === 'postgres')
    it('closes a connection whose ROLLBACK failed: the next unit on the pool never commits the failed one', async () => {
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        if (args[0] === 'ROLLBACK') {
          pg.Client.prototype.query = query; // once
          return Promise.reject(new Error('the ROLLBACK was lost'));
        }
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      const failed = `rollback-lost-${randomUUID()}@example.com`;
      try {
        await expect(
          store.write(async (tx) => {
            await tx.run(store.db.insertInto('accounts').values({ id: randomUUID(), email: failed, password_hash: 'x', plan: 'free', created_at: 1 }));
            throw new Error('the unit fails');
          }),
        ).rejects.toThrow('the unit fails');
      } finally {
        pg.Client.prototype.query = query;
      }
      for (let i = 0; i < 3; i++) await insertAccount(store, `after-${randomUUID()}@example.com`); // the pool's next units
      expect(await byEmail(other, failed)).toBeUndefined();
    });

  if (kind === 'postgres')
    it('hands a new connection out only once its settings ran: no query is queued behind another on one client (pg 9 refuses that)', async () => {
    // pg warns once per process, so the queue is watched instead: a query sent while the client is busy.
    const query = pg.Client.prototype.query;
    let queued = 0;
    pg.Client.prototype.query = function (this: pg.Client & { _queryQueue: unknown[]; _activeQuery: unknown }, ...args: unknown[]) {
      if (this._activeQuery || this._queryQueue.length > 0) queued++;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    const fresh = await database.open(); // a new pool: every connection opens now
    try {
      const seen = await Promise.all(Array.from({ length: 8 }, () => fresh.read.first<{ jit: string }>(sql`SELECT current_setting('jit') AS jit`.compile(fresh.db))));
      expect(seen.map((s) => s!.jit)).toEqual(Array(8).fill('off'));
      expect(queued).toBe(0);
    } finally {
      pg.Client.prototype.query = query;
      await fresh.close();
    }
    expect(await store.write((tx) => tx.first<{ jit: string }>(sql`SELECT current_setting('jit') AS jit`.compile(store.db)))).toEqual({ jit: 'off' });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/core/secret-box.ts';
import { idempotencyRepository } from '../../src/modules/idempotency/repository.ts';
import { keyHash } from '../../src/modules/idempotency/key-hash.ts';
import { indexQuery, SqliteKeys } from '../../src/modules/idempotency/sqlite-keys.ts';
import { type Claim, IdempotencyService, KEY_LIFETIME_MS, type KeyRow } from '../../src/modules/idempotency/service.ts';
import { migrateToLatest } from '../../src/storage/migrations/index.ts';
import type { Store } from '../../src/storage/index.ts';
import { queryPlan } from '../support/query-plan.ts';
import { createDatabaseAt, createTestDatabase, forEachStore, rawKysely, type TestDatabase, useUnits } from '../support/stores.ts';

const NOW = 1_800_000_000_000;
const ACCOUNT = '00000000-0000-4000-8000-000000000011';
const box = new SecretBox(Buffer.alloc(32, 7), 'idempotent-answers');
const answer = (body: string) => ({ status: 200, contentType: 'application/json; charset=utf-8', body });
/** A new service on the store: what a process (re)started on it sees. */
const process = (store: Store, now = () => NOW) => new IdempotencyService(idempotencyRepository(store), (w) => store.write(w), now, box);
const outcome = (claim: Claim) => claim.outcome;

// Keys written before migration 011 (SQLite: the table keyed by (account, key) becomes one in write order).
forEachStore('migration 011: the keys written before it', (kind) => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    const row = (key: string, hash: string, response: string | null) => ({
      account_id: ACCOUNT,
      idem_key: key,
      request_hash: hash,
      response_status: response === null ? null : 200,
      response_type: response === null ? null : 'application/json; charset=utf-8',
      response_body: response,
      locked_until: NOW + KEY_LIFETIME_MS,
      expires_at: NOW + KEY_LIFETIME_MS,
    });
    database = await createDatabaseAt(kind, '010_audit_license_index', async (db) => {
      await db.insertInto('accounts').values({ id: ACCOUNT, email: 'keys@example.com', password_hash: 'x', plan: 'free', created_at: NOW }).execute();
      await db.insertInto('idempotency_keys').values([row('answered', 'h1', '{"a":1}'), row('recorded', 'h2', null)]).execute();
    });
    store = await database.open(); // runs migration 011
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('still replay, stay in use, and refuse another request; other keys are new', async () => {
    const service = process(store);
    expect(await service.claim(ACCOUNT, 'answered', 'h1')).toEqual({ outcome: 'replay', response: answer('{"a":1}') });
    expect(await service.claim(ACCOUNT, 'answered', 'other')).toEqual({ outcome: 'reused' });
    expect(await service.claim(ACCOUNT, 'recorded', 'h2')).toEqual({ outcome: 'in_use' });
    expect(outcome(await service.claim(ACCOUNT, 'new', 'h'))).toBe('claimed');
  });

  it('SQLite keeps the rows in write order, hashed, with no index on the key; PostgreSQL keeps the key as the primary key', async () => {
    if (kind === 'sqlite') {
      const indexes = await store.read.all<{ name: string }>({ sql: "select name from pragma_index_list('idempotency_keys') order by name", parameters: [] } as never);
      expect(indexes.map((i) => i.name)).toEqual(['idempotency_keys_expiry_idx']);
      const rows = await store.read.all(store.db.selectFrom('idempotency_keys').select(['id', 'idem_key', 'key_hash']).orderBy('id'));
      expect(rows.map((r) => [r.idem_key, r.key_hash])).toEqual([
        ['answered', keyHash(ACCOUNT, 'answered')],
        ['recorded', keyHash(ACCOUNT, 'recorded')],
      ]);
    } else {
      const keys = await store.read.all<{ columns: string }>({ sql: "select pg_get_constraintdef(oid) as columns from pg_constraint where conrelid = 'idempotency_keys'::regclass and contype = 'p'", parameters: [] } as never);
      expect(keys.map((k) => k.columns)).toEqual(['PRIMARY KEY (account_id, idem_key)']);
    }
  });
});

// Back down from 011 (SQLite): the keys are kept, one row a key (the newest), under the key again.
describe('migration 011 down [sqlite]', () => {
  it('keeps every key, the newest row of each, with the primary key on (account, key) back', async () => {
    const database = await createTestDatabase('sqlite');
    try {
      const db = rawKysely('sqlite', database);
      await migrateToLatest(db);
      await db.insertInto('accounts').values({ id: ACCOUNT, email: 'down@example.com', password_hash: 'x', plan: 'free', created_at: NOW }).execute();
      const row = (key: string, body: string) => ({ account_id: ACCOUNT, idem_key: key, key_hash: keyHash(ACCOUNT, key), request_hash: 'h', response_status: 200, response_type: 'application/json', response_body: body, locked_until: NOW, expires_at: NOW });
      await db.insertInto('idempotency_keys').values([row('a', 'old'), row('b', 'b'), row('a', 'new')]).execute();
      await migrateToLatest(db, '010_audit_license_index');
      const rows = await db.selectFrom('idempotency_keys').select(['idem_key', 'response_body']).orderBy('idem_key').execute();
      expect(rows).toEqual([
        { idem_key: 'a', response_body: 'new' },
        { idem_key: 'b', response_body: 'b' },
      ]);
      await expect(db.insertInto('idempotency_keys').values({ ...row('b', 'again'), key_hash: undefined } as never).execute()).rejects.toThrow(/UNIQUE/);
      await db.destroy();
    } finally {
      await database.drop();
    }
  });
});

// The SQLite store's index in memory: a pointer to a row, checked against it, never the truth.
describe('SQLite keys in memory', () => {
  const ctx = useUnits('sqlite');
  const keyRow = (key: string, body: string | null): KeyRow => ({ accountId: ACCOUNT, key, hash: 'h', response: body === null ? null : answer(body), lockedUntil: NOW + KEY_LIFETIME_MS, expiresAt: NOW + KEY_LIFETIME_MS });
  beforeAll(async () => {
    await ctx.store.write((tx) => tx.run(ctx.store.db.insertInto('accounts').values({ id: ACCOUNT, email: 'mem@example.com', password_hash: 'x', plan: 'free', created_at: NOW })));
  });

  it('loads the index from the expiry index alone (covering: no read of the rows)', async () => {
    const text = await queryPlan(ctx.store, indexQuery(ctx.store).compile());
    expect(text).toMatch(/USING COVERING INDEX idempotency_keys_expiry_idx/);
  });

  it('keys that share a hash each find their own row, and are written each over its own', async () => {
    // Two keys whose hashes are equal (found by search): the index holds both ids under one hash.
    const [a, b] = ['key-63811', 'key-268090'];
    expect(keyHash(ACCOUNT, a)).toBe(keyHash(ACCOUNT, b));
    const keys = new SqliteKeys(ctx.store);
    await keys.load();
    expect(keys.isNew(ACCOUNT, a)).toBe(true);
    await ctx.units.run((unit) => keys.putIn(unit, keyRow(a, '{"a":1}')));
    expect(keys.isNew(ACCOUNT, b)).toBe(false); // the hash is known: a read tells
    expect(await keys.find(ACCOUNT, b)).toBeUndefined();
    await ctx.units.run((unit) => keys.putIn(unit, keyRow(b, '{"b":1}')));
    await keys.save(keyRow(a, '{"a":2}'));
    for (const k of [keys, new SqliteKeys(ctx.store)]) {
      expect((await k.find(ACCOUNT, a))?.response).toEqual(answer('{"a":2}'));
      expect((await k.find(ACCOUNT, b))?.response).toEqual(answer('{"b":1}'));
    }
  });

  it('a row whose unit rolled back leaves the key new, and the id it had, given to another key, is never written over', async () => {
    const keys = new SqliteKeys(ctx.store);
    expect(await keys.find(ACCOUNT, 'rolled-back')).toBeUndefined();
    await expect(
      ctx.units.run(async (unit) => {
        await keys.putIn(unit, keyRow('rolled-back', '{"lost":1}'));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    // SQLite gives the next row the id the rolled-back one had: the index still points there for the first key.
    await ctx.units.run((unit) => keys.putIn(unit, keyRow('taken', '{"taken":1}')));
    expect(await keys.find(ACCOUNT, 'rolled-back')).toBeUndefined();
    await ctx.units.run((unit) => keys.putIn(unit, keyRow('rolled-back', '{"second":1}')));
    expect((await keys.find(ACCOUNT, 'taken'))?.response).toEqual(answer('{"taken":1}'));
    expect((await keys.find(ACCOUNT, 'rolled-back'))?.response).toEqual(answer('{"second":1}'));
    // A process started now loads the same from the table; the rolled-back id was forgotten when met.
    expect(keys.isNew(ACCOUNT, 'rolled-back')).toBe(false);
    const restarted = new SqliteKeys(ctx.store);
    expect((await restarted.find(ACCOUNT, 'taken'))?.response).toEqual(answer('{"taken":1}'));
    expect((await restarted.find(ACCOUNT, 'rolled-back'))?.response).toEqual(answer('{"second":1}'));
  });

  it('writes a key over its own row: one row per key, appended in the order keys first come', async () => {
    const keys = new SqliteKeys(ctx.store);
    await keys.find(ACCOUNT, 'first');
    await ctx.units.run((unit) => keys.putIn(unit, keyRow('first', null)));
    await ctx.units.run((unit) => keys.putIn(unit, keyRow('second', null)));
    await keys.save(keyRow('first', '{"done":1}'));
    const rows = await ctx.store.read.all(ctx.store.db.selectFrom('idempotency_keys').select(['id', 'idem_key', 'response_body']).where('idem_key', 'in', ['first', 'second']).orderBy('id'));
    expect(rows.map((r) => [r.idem_key, r.response_body])).toEqual([
      ['first', '{"done":1}'],
      ['second', null],
    ]);
  });

  it('a purged key is forgotten: its next request is new, under another hash too', async () => {
    let now = NOW;
    const service = process(ctx.store, () => now);
    const first = await service.claim(ACCOUNT, 'purged', 'h1');
    if (first.outcome !== 'claimed') throw new Error('not claimed');
    await first.hold.complete(answer('{}'));
    expect(outcome(await service.claim(ACCOUNT, 'purged', 'h2'))).toBe('reused');
    now += KEY_LIFETIME_MS;
    expect(await service.purgeExpired()).toBeGreaterThanOrEqual(1);
    now -= KEY_LIFETIME_MS; // the clock back: only the purge can have made the key new
    expect(outcome(await service.claim(ACCOUNT, 'purged', 'h2'))).toBe('claimed');
  });
});

import { randomUUID } from 'node:crypto';
import { fdatasync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/storage/sqlite.ts';
import { SyncFailedError, WalSync } from '../../src/storage/wal-sync.ts';
import { useTempDirs } from '../support/temp-dirs.ts';

const tempDir = useTempDirs('tessera-walsync-');

/** A sync function the test completes by hand: each call waits in `pending`. */
function manualSync() {
  const pending: ((error: NodeJS.ErrnoException | null) => void)[] = [];
  const sync = ((_fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void pending.push(done)) as typeof fdatasync;
  return { sync, pending };
}

function walSync(sync: typeof fdatasync): WalSync {
  const wal = join(tempDir(), 'db-wal');
  writeFileSync(wal, '');
  return new WalSync(wal, sync);
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('WalSync', () => {
  it('answers a waiter only after a sync that started after it, one sync at a time', async () => {
    const { sync, pending } = manualSync();
    const wal = walSync(sync);
    const answers: string[] = [];
    wal.after((e) => answers.push(`first ${e ?? 'ok'}`));
    wal.after((e) => answers.push(`second ${e ?? 'ok'}`)); // joins the next sync, not the running one
    expect(pending).toHaveLength(1);
    pending.shift()!(null);
    expect(answers).toEqual(['first ok']);
    expect(pending).toHaveLength(1); // the next sync started for the one that waited
    pending.shift()!(null);
    expect(answers).toEqual(['first ok', 'second ok']);
    await wal.drained();
    wal.close();
  });

  it('fails the waiters of a failed sync, the ones waiting behind it, and every later one', async () => {
    const { sync, pending } = manualSync();
    const wal = walSync(sync);
    const errors: (Error | undefined)[] = [];
    wal.after((e) => errors.push(e));
    wal.after((e) => errors.push(e));
    pending.shift()!(Object.assign(new Error('EIO'), { code: 'EIO' }));
    wal.after((e) => errors.push(e));
    expect(errors).toHaveLength(3);
    for (const e of errors) expect(e).toBeInstanceOf(SyncFailedError);
    expect(pending).toHaveLength(0); // no sync is tried again
    expect(() => wal.now()).toThrow(SyncFailedError);
    await wal.drained();
    wal.close();
  });
});

describe('SQLite store with the sync off the main thread', () => {
  const insert = (store: SqliteStore, email: string) =>
    store.write((tx) => tx.run(store.db.insertInto('accounts').values({ id: randomUUID(), email, password_hash: 'x', plan: 'free', created_at: Date.now() })));
  const count = async (store: SqliteStore) => Number((await store.read.first(store.db.selectFrom('accounts').select((eb) => eb.fn.countAll().as('n'))))!.n);
  /** A store in a new directory whose syncs the test completes by hand (`pending`). */
  const openWithManualSync = async () => {
    const dir = tempDir();
    const store = await SqliteStore.open(dir);
    const { sync, pending } = manualSync();
    (store as unknown as { sync: WalSync }).sync = new WalSync(join(dir, 'tessera.db-wal'), sync);
    return { dir, store, pending };
  };

  it('answers a batch only after its sync, and what it wrote is there after a reopen', async () => {
    const { dir, store, pending } = await openWithManualSync();
    let answered = false;
    const write = insert(store, 'a@example.com').then(() => (answered = true));
    while (pending.length === 0) await settled();
    expect(answered).toBe(false); // committed, not yet synced: not acknowledged
    expect(await count(store)).toBe(1); // but readers see it (docs/decisions/sqlite-wal-sync.md)
    pending.shift()!(null);
    await write;
    await store.close();
    const reopened = await SqliteStore.open(dir);
    expect(await count(reopened)).toBe(1);
    await reopened.close();
  });

  it('answers a write with awaitSync: false once committed, and still syncs its batch', async () => {
    const { store, pending } = await openWithManualSync();
    let synced = false;
    const durable = insert(store, 'durable@example.com').then(() => (synced = true));
    const committed = store.write((tx) => tx.run(store.db.insertInto('accounts').values({ id: randomUUID(), email: 'lazy@example.com', password_hash: 'x', plan: 'free', created_at: Date.now() })), { awaitSync: false });
    expect(await committed).toBe(1); // no sync has completed yet
    expect(synced).toBe(false);
    expect(pending).toHaveLength(1); // its batch's sync was started all the same
    pending.shift()!(null);
    await durable;
    await store.close();
  });

  it('holds the units queued while a sync runs and commits them as one batch once it completed', async () => {
    const { store, pending } = await openWithManualSync();
    const first = insert(store, 'first@example.com');
    while (pending.length === 0) await settled();
    const answered: string[] = [];
    const behind = ['b1', 'b2', 'b3'].map((name) => insert(store, `${name}@example.com`).then(() => answered.push(name)));
    for (let turn = 0; turn < 5; turn++) await settled();
    expect(store.stats().queued_units).toBe(3); // not committed while the sync runs
    expect(await count(store)).toBe(1);
    pending.shift()!(null);
    await first;
    while (pending.length === 0) await settled(); // the three committed together, then one sync for them
    expect(await count(store)).toBe(4);
    expect(answered).toEqual([]);
    pending.shift()!(null);
    await Promise.all(behind);
    expect(answered).toEqual(['b1', 'b2', 'b3']);
    expect(pending).toHaveLength(0);
    await store.close();
  });

  it('after a failed sync fails that batch, refuses every later write and fails the health check', async () => {
    const { store, pending } = await openWithManualSync();
    const first = insert(store, 'lost@example.com');
    while (pending.length === 0) await settled();
    const second = insert(store, 'behind@example.com'); // waits for the first sync, then fails with it
    await settled();
    pending.shift()!(Object.assign(new Error('EIO'), { code: 'EIO' }));
    await expect(first).rejects.toBeInstanceOf(SyncFailedError);
    await expect(second).rejects.toBeInstanceOf(SyncFailedError);
    await expect(insert(store, 'later@example.com')).rejects.toBeInstanceOf(SyncFailedError);
    await expect(store.ping()).rejects.toBeInstanceOf(SyncFailedError);
    await store.close();
  });

  it('syncs a write made outside a batch before it returns (refused once a sync failed)', async () => {
    const dir = tempDir();
    const store = await SqliteStore.open(dir);
    const account = () => store.db.insertInto('accounts').values({ id: randomUUID(), email: `${randomUUID()}@example.com`, password_hash: 'x', plan: 'free', created_at: Date.now() });
    expect(await store.read.run(account())).toBe(1);
    const { sync, pending } = manualSync();
    (store as unknown as { sync: WalSync }).sync = new WalSync(join(dir, 'tessera.db-wal'), sync);
    const batch = insert(store, 'batch@example.com');
    while (pending.length === 0) await settled();
    pending.shift()!(Object.assign(new Error('EIO'), { code: 'EIO' }));
    await expect(batch).rejects.toBeInstanceOf(SyncFailedError);
    await expect(store.read.run(account())).rejects.toBeInstanceOf(SyncFailedError);
    await store.close();
  });
});

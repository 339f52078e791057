import { randomUUID } from 'node:crypto';
import { fdatasync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/storage/sqlite.ts';
import { SyncFailedError, WalSync } from '../../src/storage/wal-sync.ts';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-walsync-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

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

  it('answers a batch only after its sync, and what it wrote is there after a reopen', async () => {
    const dir = tempDir();
    const store = await SqliteStore.open(dir);
    const { sync, pending } = manualSync();
    (store as unknown as { sync: WalSync }).sync = new WalSync(join(dir, 'tessera.db-wal'), sync);
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

  it('after a failed sync fails that batch, refuses every later write and fails the health check', async () => {
    const dir = tempDir();
    const store = await SqliteStore.open(dir);
    const { sync, pending } = manualSync();
    (store as unknown as { sync: WalSync }).sync = new WalSync(join(dir, 'tessera.db-wal'), sync);
    const first = insert(store, 'lost@example.com');
    while (pending.length === 0) await settled();
    const second = insert(store, 'behind@example.com'); // commits while the first sync runs
    while ((store.stats().queued_units ?? 0) > 0) await settled();
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

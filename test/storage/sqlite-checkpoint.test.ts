import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/storage/sqlite.ts';
import { useTempDirs } from '../support/temp-dirs.ts';
import { waitFor } from '../support/wait.ts';
import { openSqlite } from '../../src/storage/sqlite-binding.ts';

const tempDir = useTempDirs('tessera-checkpoint-');

const PAGE = 4096;
/** A row of about one page, so each write adds a WAL frame or two. */
const filler = 'x'.repeat(3000);

async function writeRows(store: SqliteStore, from: number, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, (_, i) => store.write((tx) => tx.run(sql`insert into filler (id, body) values (${from + i}, ${filler})`.compile(store.db)))),
  );
}

async function openWithFiller(dir: string, options: Parameters<typeof SqliteStore.open>[1]): Promise<SqliteStore> {
  const store = await SqliteStore.open(dir, options);
  await store.write((tx) => tx.run(sql`create table if not exists filler (id integer primary key, body text not null)`.compile(store.db)));
  return store;
}

/** Threads of this process running at the lowest priority (nice 19), from /proc (Linux). */
function lowestPriorityThreads(): number {
  return readdirSync('/proc/self/task').filter((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // Fields after the command's closing parenthesis: state is the 3rd field of stat, nice the 19th.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16] === '19';
  }).length;
}

describe('SQLite checkpoints', () => {
  it('replaces a worker that ended by itself, and checkpoints go on', async () => {
    const dir = tempDir();
    const store = await openWithFiller(dir, { checkpointEveryMs: 0 });
    const checkpointer = (store as unknown as { checkpointer: { worker: { terminate(): Promise<number> } } }).checkpointer;
    const first = checkpointer.worker;
    await first.terminate();
    await waitFor(() => checkpointer.worker !== first, { timeoutMs: 5000, message: 'a new checkpointer worker' });
    const before = store.checkpoints.periodic;
    for (let round = 0; round < 5; round++) await writeRows(store, round * 200, 200);
    await waitFor(() => store.checkpoints.periodic > before, { timeoutMs: 5000, message: 'a checkpoint on the new worker' });
    await store.close();
  });

  it('copies the WAL into the database file on the worker while writes go on', async () => {
    const dir = tempDir();
    const store = await openWithFiller(dir, { checkpointEveryMs: 0 });
    for (let round = 0; round < 5; round++) await writeRows(store, round * 200, 200);
    await waitFor(() => store.checkpoints.periodic > 0, { timeoutMs: 5000, message: 'a checkpoint on the worker' });
    await store.close();

    // Another connection reads every row back from the database the checkpoints wrote.
    const db = openSqlite(join(dir, 'tessera.db'), { readonly: true });
    expect(db.prepare('select count(*) as n from filler').get()).toEqual({ n: 1000 });
    db.close();
  });

  it.each([
    { core: 'a core of its own', sharedCore: false },
    { core: 'a shared core (low priority, hurried when writes wait)', sharedCore: true },
  ])('keeps the WAL bounded under writes that never pause, the worker on $core: past the limit a batch waits for a checkpoint to its end', async ({ sharedCore }) => {
    const dir = tempDir();
    const store = await openWithFiller(dir, { checkpointEveryMs: 5, walLimitFrames: 300, sharedCore });
    // Twenty writers, each writing one row after another: batch after batch with no pause between.
    await Promise.all(
      Array.from({ length: 20 }, async (_, writer) => {
        for (let i = 0; i < 150; i++) await writeRows(store, writer * 1000 + i, 1);
      }),
    );
    expect(store.checkpoints.toEnd).toBeGreaterThan(0);
    // The file's high-water mark: the limit, plus what batches append while the checkpoint that finds
    // the WAL past it runs (more on a loaded machine, and with a low-priority worker: 1,000-2,200
    // frames either way with the other storage suites running beside). Without the limit these
    // writes reach about 12,000 frames.
    expect(statSync(join(dir, 'tessera.db-wal')).size).toBeLessThan(16 * 300 * (PAGE + 24));
    await store.close();
  });

  it.runIf(process.platform === 'linux')('runs the worker at the lowest priority on a shared core, and only there', async () => {
    const before = lowestPriorityThreads();
    const own = await openWithFiller(tempDir(), { sharedCore: false, checkpointEveryMs: 0 });
    await writeRows(own, 0, 50);
    await waitFor(() => own.checkpoints.periodic > 0, { timeoutMs: 5000, message: 'a checkpoint on the worker' });
    expect(lowestPriorityThreads()).toBe(before);

    const shared = await openWithFiller(tempDir(), { sharedCore: true, checkpointEveryMs: 0 });
    await writeRows(shared, 0, 50);
    // The worker lowers its priority before it takes its first checkpoint.
    await waitFor(() => shared.checkpoints.periodic > 0, { timeoutMs: 5000, message: 'a checkpoint on the low-priority worker' });
    expect(lowestPriorityThreads()).toBe(before + 1);
    await shared.close();
    await own.close();
  });

  it('closes with the store: every committed row is in the database file afterwards', async () => {
    const dir = tempDir();
    const store = await openWithFiller(dir, {});
    await writeRows(store, 0, 300);
    await store.close();
    const db = openSqlite(join(dir, 'tessera.db'), { readonly: true });
    expect(db.prepare('select count(*) as n from filler').get()).toEqual({ n: 300 });
    db.close();
  });
});

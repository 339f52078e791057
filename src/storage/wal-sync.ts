import { closeSync, fdatasync, fdatasyncSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/** Called once the commits it waited for are on disk (no argument), or could not be made durable. */
export type SyncWaiter = (error?: Error) => void;

/** Raised for every write once a sync failed: what was committed since may not be on disk. */
export class SyncFailedError extends Error {
  constructor(cause: unknown) {
    super('the SQLite write-ahead log could not be synced to disk; writes are refused until the server restarts', { cause });
    this.name = 'SyncFailedError';
  }
}

/**
 * Makes the SQLite store's commits durable off the main thread (docs/decisions/sqlite-wal-sync.md).
 * The connection commits with synchronous=NORMAL (SQLite writes the WAL frames but does not sync
 * them); each batch then waits here for an fdatasync of the -wal file on the libuv pool, started
 * after its commit returned, before any of its units is answered. One sync runs at a time and
 * covers every commit made before it started, so batches that commit while it runs share the next.
 * A failed sync fails its waiters and every later one: after a failed fsync the kernel may have
 * dropped the dirty pages, so nothing committed since can be promised.
 */
export class WalSync {
  private readonly fd: number;
  private running = false;
  private waiting: SyncWaiter[] = [];
  private idle: (() => void)[] = [];
  failure: SyncFailedError | undefined;

  /** `syncFile` is fs.fdatasync; tests pass one that fails. */
  constructor(
    walFile: string,
    private readonly syncFile: typeof fdatasync = fdatasync,
  ) {
    this.fd = openSync(walFile, 'r');
    // SQLite syncs the directory on a new WAL's first sync; NORMAL may not sync it for a long
    // time, so the file's directory entry is made durable here, once.
    const dir = openSync(dirname(walFile), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }

  /** Waits for a sync that starts after this call: everything committed before it is then durable. */
  after(waiter: SyncWaiter): void {
    if (this.failure) return waiter(this.failure);
    this.waiting.push(waiter);
    if (!this.running) this.start();
  }

  /** Syncs now on the main thread (a write that committed outside a batch, which is rare). */
  now(): void {
    if (this.failure) throw this.failure;
    try {
      fdatasyncSync(this.fd);
    } catch (error) {
      this.fail(error);
      throw this.failure;
    }
  }

  /** A sync is in flight: a batch committed now would wait for the next one anyway. */
  get busy(): boolean {
    return this.running;
  }

  private start(): void {
    const covered = this.waiting;
    this.waiting = [];
    this.running = true;
    this.syncFile(this.fd, (error) => {
      this.running = false;
      if (error) this.fail(error, covered);
      else for (const waiter of covered) waiter();
      if (this.waiting.length > 0) this.start();
      else this.settleIdle();
    });
  }

  private fail(error: unknown, covered: SyncWaiter[] = []): void {
    this.failure ??= new SyncFailedError(error);
    const failed = [...covered, ...this.waiting];
    this.waiting = [];
    for (const waiter of failed) waiter(this.failure);
  }

  private settleIdle(): void {
    const resume = this.idle;
    this.idle = [];
    for (const done of resume) done();
  }

  /** Resolves once no sync runs or waits (before the connection closes). */
  drained(): Promise<void> {
    if (!this.running && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  close(): void {
    closeSync(this.fd);
  }
}

import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What `PRAGMA wal_checkpoint` reports: frames in the WAL, and how many of them are in the database file. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * The worker: its own connection to the database, which runs a PASSIVE checkpoint whenever asked
 * (it copies what it can without waiting for the writer or readers). synchronous=NORMAL makes
 * SQLite sync the WAL before copying its frames and the database file after, as it would on the
 * writer's own connection; the WAL is not restarted over frames until their copy is on disk.
 * Plain JavaScript evaluated in the worker, so the same code runs from `dist/`, under tsx and under
 * the test runner; better-sqlite3 is passed by its resolved path.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = NORMAL');
db.pragma('mmap_size = 0');
db.pragma('wal_autocheckpoint = 0');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ ok: true, result: checkpoint.get() });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error && error.message || error) });
  }
});
`;

/**
 * Checkpoints the SQLite store's WAL on a worker thread (docs/decisions/sqlite-wal-sync.md,
 * "Checkpoints"). On the writer's connection a checkpoint stopped the event loop for 25-35 ms
 * (copying a few thousand pages, then an fsync of the database file of about 12 ms), which every
 * request in flight waited out: the activation p99.
 */
export class Checkpointer {
  private readonly worker: Worker;
  private pending: { resolve: (result: CheckpointResult) => void; reject: (error: Error) => void } | undefined;
  private current: Promise<CheckpointResult> | undefined;
  private closed = false;

  constructor(file: string) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver } });
    // Never keeps the process alive by itself; close() ends it with the store.
    this.worker.unref();
    this.worker.on('message', (message: { ok: true; result: CheckpointResult } | { ok: false; error: string }) => {
      const pending = this.pending;
      this.pending = undefined;
      if (message.ok) pending?.resolve(message.result);
      else pending?.reject(new Error(message.error));
    });
    this.worker.on('error', (error) => {
      const pending = this.pending;
      this.pending = undefined;
      pending?.reject(error);
    });
  }

  /** A checkpoint is running on the worker. */
  get running(): boolean {
    return this.pending !== undefined;
  }

  /** Runs one checkpoint on the worker (one at a time: callers check `running`). */
  run(): Promise<CheckpointResult> {
    if (this.closed) return Promise.reject(new Error('Checkpointer is closed'));
    if (this.pending) return Promise.reject(new Error('a checkpoint is already running'));
    this.current = new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage('checkpoint');
    });
    return this.current;
  }

  /** Resolves once no checkpoint runs. */
  async idle(): Promise<void> {
    if (this.pending) await this.current!.catch(() => undefined);
  }

  /** Waits for the running checkpoint, then closes the worker's connection and ends it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.idle();
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    // Held by the wait now: an unreferenced worker would let the process end before the store closed.
    this.worker.ref();
    this.worker.postMessage('close');
    await exited;
  }
}

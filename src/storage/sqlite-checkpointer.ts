import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { betterSqlitePath, bindingName } from './sqlite-binding.ts';

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
 * the test runner; it opens the store's binding (sqlite-binding.ts), better-sqlite3 by its resolved path. Each checkpoint, done or failed,
 * also counts itself in a shared counter, which the event loop can wait on (`Checkpointer.hurry`).
 * In the background the thread lowers its own priority: on Linux, setpriority on "this process"
 * (0) applies to the calling thread alone; elsewhere it would slow the whole process, so it is not done.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
let checkpoint, close;
if (workerData.binding === 'node:sqlite') {
  const emit = process.emitWarning;
  process.emitWarning = (warning, ...rest) => String(warning).startsWith('SQLite is an experimental feature') || emit.call(process, warning, ...rest);
  const { DatabaseSync } = require('node:sqlite');
  process.emitWarning = emit;
  const db = new DatabaseSync(workerData.file, { timeout: 1000 });
  db.exec('PRAGMA synchronous = NORMAL; PRAGMA mmap_size = 0; PRAGMA wal_autocheckpoint = 0');
  const statement = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  checkpoint = () => ({ ...statement.get() });
  close = () => db.close();
} else {
  const Database = require(workerData.driver);
  const db = new Database(workerData.file, { fileMustExist: true });
  db.pragma('busy_timeout = 1000');
  db.pragma('synchronous = NORMAL');
  db.pragma('mmap_size = 0');
  db.pragma('wal_autocheckpoint = 0');
  const statement = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  checkpoint = () => statement.get();
  close = () => db.close();
}
const finished = new Int32Array(workerData.finished);
if (workerData.background && process.platform === 'linux') {
  try {
    require('node:os').setPriority(19);
  } catch {
    // Not allowed here (a sandbox): it runs at the process's priority, as without.
  }
}
parentPort.on('message', (message) => {
  if (message === 'close') {
    close();
    parentPort.close();
    return;
  }
  let reply;
  try {
    reply = { ok: true, result: checkpoint() };
  } catch (error) {
    reply = { ok: false, error: String(error && error.message || error) };
  }
  Atomics.add(finished, 0, 1);
  Atomics.notify(finished, 0);
  parentPort.postMessage(reply);
});
`;

/** A worker that ended by itself is replaced after this long. */
const RESTART_AFTER_MS = 1000;
/** How long writes wait for a checkpoint before the event loop steps aside for it (shared core). */
const HURRY_AFTER_MS = 20;
/** The longest the event loop stays blocked for one (the worker may be waiting on the disk, not the core). */
const HURRY_AT_MOST_MS = 250;

export interface CheckpointerOptions {
  /**
   * The process runs on one core (CPU affinity, a one-vCPU machine), so the worker and the event
   * loop take turns on it. Default: `availableParallelism() === 1`.
   */
  sharedCore?: boolean;
}

/**
 * Checkpoints the SQLite store's WAL on a worker thread (docs/decisions/sqlite-wal-sync.md,
 * "Checkpoints"). On the writer's connection a checkpoint stopped the event loop for 25-35 ms
 * (copying a few thousand pages, then an fsync of the database file of about 12 ms), which every
 * request in flight waited out: the activation p99.
 *
 * On a shared core the worker runs at the lowest priority, in the event loop's idle moments: at the
 * same priority it took half the core for the 100-150 ms of each checkpoint, which every request in
 * flight then took twice as long through. When writes wait for a checkpoint (`urgent`), the event
 * loop blocks after HURRY_AFTER_MS until it ends, so a low-priority worker behind busy reads still
 * gets the core (an unprivileged thread cannot raise its priority again).
 */
export class Checkpointer {
  private worker!: Worker;
  /** The worker ended without being asked to (it failed): checkpoints wait for its replacement. */
  private exited!: Promise<void>;
  private alive = false;
  private pending: { resolve: (result: CheckpointResult) => void; reject: (error: Error) => void } | undefined;
  private current: Promise<CheckpointResult> | undefined;
  private closed = false;
  /** Checkpoints the worker has finished, counted by the worker itself. */
  private readonly finished = new Int32Array(new SharedArrayBuffer(4));
  /** `finished` when the running checkpoint was asked for. */
  private asked = 0;
  readonly sharedCore: boolean;
  private readonly workerData: object;

  constructor(file: string, options: CheckpointerOptions = {}) {
    this.sharedCore = options.sharedCore ?? availableParallelism() === 1;
    const driver = bindingName === 'better-sqlite3' ? betterSqlitePath() : undefined;
    this.workerData = { file, binding: bindingName, driver, finished: this.finished.buffer, background: this.sharedCore };
    this.start();
  }

  private start(): void {
    // None of the process's own flags (a loader, --input-type=module): the source is plain CommonJS.
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: this.workerData, execArgv: [] });
    this.worker = worker;
    this.alive = true;
    // Never keeps the process alive by itself; close() ends it with the store.
    worker.unref();
    worker.on('message', (message: { ok: true; result: CheckpointResult } | { ok: false; error: string }) => {
      const pending = this.pending;
      this.pending = undefined;
      if (message.ok) pending?.resolve(message.result);
      else pending?.reject(new Error(message.error));
    });
    this.exited = new Promise((resolve) =>
      worker.once('exit', () => {
        this.alive = false;
        resolve();
        const pending = this.pending;
        this.pending = undefined;
        pending?.reject(new Error('the checkpointer worker exited'));
        // A worker that failed is replaced: the WAL must keep being copied, or it grows without end.
        if (!this.closed) setTimeout(() => !this.closed && this.start(), RESTART_AFTER_MS).unref();
      }),
    );
    // Its error ends it ('exit' follows): handled there.
    worker.on('error', () => {});
  }

  /** A checkpoint is running on the worker. */
  get running(): boolean {
    return this.pending !== undefined;
  }

  /**
   * Runs one checkpoint on the worker (one at a time: callers check `running`). `urgent`: something
   * waits for it (see the class).
   */
  run(urgent = false): Promise<CheckpointResult> {
    if (this.closed) return Promise.reject(new Error('Checkpointer is closed'));
    if (this.pending) return Promise.reject(new Error('a checkpoint is already running'));
    if (!this.alive) return Promise.reject(new Error('the checkpointer worker is being replaced'));
    this.current = new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.asked = Atomics.load(this.finished, 0);
      this.worker.postMessage('checkpoint');
    });
    return urgent ? this.hurry(this.current) : this.current;
  }

  /** Resolves once no checkpoint runs. */
  async idle(urgent = false): Promise<void> {
    if (this.pending) await (urgent ? this.hurry(this.current!) : this.current!).catch(() => undefined);
  }

  /** On a shared core: if the checkpoint has not ended after HURRY_AFTER_MS, blocks until it has (at most HURRY_AT_MOST_MS). */
  private hurry<T>(checkpoint: Promise<T>): Promise<T> {
    if (!this.sharedCore) return checkpoint;
    const timer = setTimeout(() => {
      if (this.pending) Atomics.wait(this.finished, 0, this.asked, HURRY_AT_MOST_MS);
    }, HURRY_AFTER_MS);
    return checkpoint.finally(() => clearTimeout(timer));
  }

  /** Waits for the running checkpoint, then closes the worker's connection and ends it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.idle();
    // Held by the wait now: an unreferenced worker would let the process end before the store closed.
    this.worker.ref();
    this.worker.postMessage('close');
    await this.exited;
  }
}

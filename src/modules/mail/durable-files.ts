import { mkdir, open, rename } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Writes files into one directory so that a file is whole and on disk once `write` resolves:
 * written under a temporary name and fsynced, renamed, then the directory fsynced (the rename
 * itself survives a power loss only then). Every step runs on libuv's thread pool, never on the
 * event loop. The directory fsync is shared: callers waiting meanwhile are covered by one fsync
 * that starts after the running one, as a database's group commit does.
 */
export class DurableFiles {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(readonly dir: string) {}

  async write(name: string, data: Uint8Array): Promise<void> {
    const temporary = join(this.dir, `.${name}.tmp`);
    await this.writeSynced(temporary, data).catch(async (error: NodeJS.ErrnoException) => {
      // Made on first use (and again should an operator remove it): no mkdir on every write.
      if (error.code !== 'ENOENT') throw error;
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await this.writeSynced(temporary, data);
    });
    await rename(temporary, join(this.dir, name));
    await this.syncDirectory();
  }

  private async writeSynced(path: string, data: Uint8Array): Promise<void> {
    const file = await open(path, 'w', 0o600);
    try {
      await file.writeFile(data);
      await file.datasync();
    } finally {
      await file.close();
    }
  }

  /** Resolves once an fsync of the directory that began after this call has finished. */
  private syncDirectory(): Promise<void> {
    if (!this.running) return this.startSync();
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.startSync();
      });
    return this.queued;
  }

  private startSync(): Promise<void> {
    const sync = (async () => {
      const dir = await open(this.dir, 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    })();
    const settled: Promise<void> = sync.finally(() => {
      if (this.running === settled) this.running = undefined;
    });
    this.running = settled;
    return settled;
  }
}

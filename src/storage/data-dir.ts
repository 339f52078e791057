import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from './sqlite-binding.ts';

/** Files under DATA_DIR are the owner's alone: they hold license keys, addresses, secrets and queued links. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;
/** What the process creates from now on gets no group or other bits (SQLite's -wal/-shm, .eml files, secret.key). */
const UMASK = 0o077;

/**
 * Creates DATA_DIR owner-only and fixes what an older version (or a careless copy) left readable:
 * every directory under it 0700, every file 0600 (tessera.db, -wal, -shm, secret.key, outbox/*.eml).
 * Symbolic links are left alone (never followed). Sets the process umask first, so files created
 * later (SQLite opens -wal and -shm lazily) are born private.
 */
export function secureDataDir(dataDir: string): void {
  process.umask(UMASK);
  mkdirSync(dataDir, { recursive: true, mode: DIR_MODE });
  const walk = (path: string): void => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) {
      if ((stat.mode & 0o777) !== DIR_MODE) chmodSync(path, DIR_MODE);
      for (const name of readdirSync(path)) walk(join(path, name));
    } else if (stat.isFile() && (stat.mode & 0o777) !== FILE_MODE) {
      chmodSync(path, FILE_MODE);
    }
  };
  walk(dataDir);
}

export interface DataDirLock {
  release(): void;
}

/**
 * One server process per DATA_DIR: SQLite's writer lock is per connection, so a second `npm start`
 * would otherwise serve beside the first with its own in-memory limits (and, on the same port, run
 * migrations and start a mail worker before failing). The lock is an exclusive SQLite lock on
 * DATA_DIR/.lock, held by an open transaction for the life of the process: it is a POSIX record
 * lock, which the kernel releases when the process ends in any way (kill -9 included), so a crash
 * leaves no stale lock and no pid file to second-guess. The operator CLI does not take it.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = join(dataDir, '.lock');
  const conn = openSqlite(file, { timeout: 0 });
  try {
    conn.pragma('locking_mode = EXCLUSIVE');
    conn.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    conn.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      throw new Error(`DATA_DIR ${dataDir} is in use by another Tessera process (${file} is locked). Stop it first, or give this one another DATA_DIR.`);
    }
    throw err;
  }
  return {
    release: () => {
      if (conn.open) conn.close();
    },
  };
}

import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AppError } from '../core/errors.ts';
import { migrations } from './migrations/index.ts';
import { onlineBackup, openSqlite, type SqliteConnection } from './sqlite-binding.ts';

export const DATABASE_FILE = 'tessera.db';

/** What a backup or restore did, printed by the CLI. */
export interface BackupResult {
  file: string;
  bytes: number;
  /** The latest migration the copy holds. */
  migration: string;
}

/**
 * Checks that `file` is an intact Tessera database this version can run: SQLite's quick check
 * passes, it has the migration table, and every migration it records is one this version knows.
 */
function verify(file: string): string {
  let conn: SqliteConnection;
  try {
    conn = openSqlite(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new AppError('invalid_request', `${file} cannot be opened as a database: ${(error as Error).message}`);
  }
  try {
    const check = conn.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new AppError('invalid_request', `${file} is damaged: ${String(check)}`);
    const table = conn.prepare("select name from sqlite_master where type = 'table' and name = 'tessera_migrations'").get();
    if (!table) throw new AppError('invalid_request', `${file} is not a Tessera database.`);
    const applied = (conn.prepare('select name from tessera_migrations order by name').all() as { name: string }[]).map((r) => r.name);
    const unknown = applied.filter((name) => !(name in migrations));
    if (unknown.length) throw new AppError('invalid_request', `${file} was made by a newer version of Tessera (migration ${unknown.join(', ')}).`);
    if (!applied.length) throw new AppError('invalid_request', `${file} is not a Tessera database.`);
    return applied[applied.length - 1]!;
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError('invalid_request', `${file} is not a Tessera database: ${(error as Error).message}`);
  } finally {
    conn.close();
  }
}

/**
 * A consistent copy of the SQLite store while the server runs: SQLite's online backup, in one
 * step (a read transaction on a WAL database does not block the server's writes, and a single
 * step is never restarted by them), then verified.
 */
export async function backupSqlite(dataDir: string, to: string): Promise<BackupResult> {
  const source = join(dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new AppError('invalid_request', `No database at ${source} (set DATA_DIR).`);
  const target = resolve(to);
  if (existsSync(target)) throw new AppError('invalid_request', `${target} exists; choose a new file.`);
  const partial = `${target}.partial`;
  // Created 0600 before a page is copied (SQLite keeps an existing file's mode, and gives its journal
  // the same); a leftover of an interrupted backup goes first.
  rmSync(partial, { force: true });
  closeSync(openSync(partial, 'wx', 0o600));
  const conn = openSqlite(source, { fileMustExist: true });
  try {
    conn.pragma('busy_timeout = 5000');
    await onlineBackup(conn, partial);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    conn.close();
  }
  const migration = verify(partial);
  renameSync(partial, target);
  return { file: target, bytes: statSync(target).size, migration };
}

/**
 * Replaces the data directory's database with a verified backup. Refused while a server (any
 * other connection) has the database open: leaving WAL mode needs the only connection, so that
 * is the test, and it also folds the old WAL into the file before it is replaced.
 */
export async function restoreSqlite(dataDir: string, from: string): Promise<BackupResult> {
  const source = resolve(from);
  const migration = verify(source);
  const target = join(dataDir, DATABASE_FILE);
  if (existsSync(target)) {
    const conn = openSqlite(target, { fileMustExist: true });
    try {
      conn.pragma('busy_timeout = 0');
      const mode = conn.pragma('journal_mode = DELETE', { simple: true });
      if (mode !== 'delete') throw new Error(`journal mode stayed ${String(mode)}`);
    } catch {
      throw new AppError('invalid_request', `The database in ${dataDir} is in use: stop the server first, then restore.`);
    } finally {
      conn.close();
    }
  }
  const backup = openSqlite(source, { readonly: true, fileMustExist: true });
  try {
    await onlineBackup(backup, target);
  } finally {
    backup.close();
  }
  return { file: target, bytes: statSync(target).size, migration };
}

import type { Store } from './store.ts';

export interface StoreOptions {
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
  /** SQLite: bytes of the database file read through a memory map (0: none; default SQLITE_MMAP_DEFAULT). */
  sqliteMmapBytes?: number;
}

/**
 * PostgreSQL when a postgres:// URL is given, else the embedded SQLite file in DATA_DIR. Each store's
 * module (and its driver) is loaded only when chosen (docs/decisions/lazy-modules.md).
 */
export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.databaseUrl) return (await import('./postgres.ts')).PostgresStore.open(options.databaseUrl, options.poolSize);
  return (await import('./sqlite.ts')).SqliteStore.open(options.dataDir, { mmapBytes: options.sqliteMmapBytes });
}

export type { Executor, SqlQuery, Store } from './store.ts';

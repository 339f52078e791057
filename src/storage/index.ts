import { PostgresStore } from './postgres.ts';
import { SqliteStore } from './sqlite.ts';
import type { Store } from './store.ts';

export interface StoreOptions {
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
  /** SQLite: bytes of the database file read through a memory map (0: none; default SQLITE_MMAP_DEFAULT). */
  sqliteMmapBytes?: number;
}

/** PostgreSQL when a postgres:// URL is given, else the embedded SQLite file in DATA_DIR. */
export function openStore(options: StoreOptions): Promise<Store> {
  if (options.databaseUrl) return PostgresStore.open(options.databaseUrl, options.poolSize);
  return SqliteStore.open(options.dataDir, { mmapBytes: options.sqliteMmapBytes });
}

export type { Executor, Store } from './store.ts';

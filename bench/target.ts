import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where a bench's store lives: a data directory, and (PostgreSQL) a database URL. */
export interface BenchTarget {
  dataDir: string;
  databaseUrl?: string;
}

/**
 * A temporary home for one store, dropped afterwards: a data directory, and when `serverUrl` (a
 * PostgreSQL server) is given, a fresh database on it.
 */
export async function withTarget<T>(serverUrl: string | undefined, use: (target: BenchTarget) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
  try {
    if (serverUrl === undefined) return await use({ dataDir });
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    const name = `tessera_bench_${process.pid}_${Date.now()}`;
    try {
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(serverUrl);
      url.pathname = `/${name}`;
      return await use({ dataDir, databaseUrl: url.toString() });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { EventBus } from '../../src/core/unit-of-work.ts';
import { openStore, type Store } from '../../src/storage/index.ts';
import { migrateToLatest } from '../../src/storage/migrations/index.ts';
import { StoreUnits } from '../../src/storage/unit-of-work.ts';
import { openSqlite } from '../../src/storage/sqlite-binding.ts';

export type StoreKind = 'sqlite' | 'postgres';

const databaseUrl = process.env.DATABASE_URL;
const inCi = process.env.CI === 'true';

/** The stores a storage-touching suite runs on: SQLite always, PostgreSQL when DATABASE_URL is set. */
export function storeKinds(): StoreKind[] {
  if (databaseUrl) return ['sqlite', 'postgres'];
  if (inCi) throw new Error('CI must set DATABASE_URL: the PostgreSQL store is not being tested');
  if (!warned) {
    warned = true;
    console.warn('\n[tessera tests] DATABASE_URL is not set: PostgreSQL cases are SKIPPED (CI runs them).\n');
  }
  return ['sqlite'];
}
let warned = false;

/** Runs `body` once per store, e.g. `describe.each`-style: forEachStore('licenses', (kind) => {...}). */
export function forEachStore(name: string, body: (kind: StoreKind) => void): void {
  for (const kind of storeKinds()) describe(`${name} [${kind}]`, () => body(kind));
}

export interface TestDatabase {
  /** What DATABASE_URL / DATA_DIR a server process would be given. */
  env: { DATABASE_URL?: string; DATA_DIR: string };
  open(): Promise<Store>;
  drop(): Promise<void>;
}

/** A fresh, empty database: a temp directory for SQLite, a new database for PostgreSQL. */
export async function createTestDatabase(kind: StoreKind): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-test-'));
  if (kind === 'sqlite') {
    return {
      env: { DATA_DIR: dataDir },
      open: () => openStore({ dataDir }),
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  if (!databaseUrl) throw new Error('DATABASE_URL is not set');
  const name = `tessera_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: url.toString(), DATA_DIR: dataDir },
    open: () => openStore({ databaseUrl: url.toString(), dataDir, poolSize: 10 }),
    drop: async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A bare Kysely on a test database, without the store (no migrations run): tests of a migration
 * bring the schema to the version before it, write old-style rows, then open the store.
 */
export function rawKysely(kind: StoreKind, database: TestDatabase): Kysely<any> {
  return kind === 'sqlite'
    ? new Kysely({ dialect: new SqliteDialect({ database: openSqlite(join(database.env.DATA_DIR, 'tessera.db')) }) })
    : new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.env.DATABASE_URL }) }) });
}

/**
 * A test database whose schema stops at `lastMigration`, with `seed`'s old-style rows in it: opening
 * its store then runs the later migrations over them (the tests of a migration).
 */
export async function createDatabaseAt(kind: StoreKind, lastMigration: string, seed: (db: Kysely<any>) => Promise<unknown>): Promise<TestDatabase> {
  const database = await createTestDatabase(kind);
  const db = rawKysely(kind, database);
  try {
    await migrateToLatest(db, lastMigration);
    await seed(db);
  } finally {
    await db.destroy();
  }
  return database;
}

/** A fresh store of `kind` for the enclosing suite, with units of work over it (no subscribers). */
export function useUnits(kind: StoreKind): { database: TestDatabase; store: Store; units: StoreUnits } {
  const ctx = {} as { database: TestDatabase; store: Store; units: StoreUnits };
  beforeAll(async () => {
    ctx.database = await createTestDatabase(kind);
    ctx.store = await ctx.database.open();
    ctx.units = new StoreUnits(ctx.store, new EventBus());
  });
  afterAll(async () => {
    await ctx.store?.close();
    await ctx.database?.drop();
  });
  return ctx;
}

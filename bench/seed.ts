import { randomBytes } from 'node:crypto';
import { KEY_ALPHABET } from '../src/core/license-key.ts';
import { loadConfig } from '../src/config.ts';
import { createServices } from '../src/services.ts';
import { openStore, type Store } from '../src/storage/index.ts';
import type { SearchIndexer } from '../src/storage/sqlite-search-index.ts';
import { type Database, flag } from '../src/storage/schema.ts';
import type { SqlQuery } from '../src/storage/store.ts';
import { cliPrincipal } from '../src/core/principal.ts';

/** What a scenario can use: the seeded tenant and its licenses, each with one active device. */
export interface Fixture {
  apiKey: string;
  productId: string;
  /** License keys; license i has the active device `deviceOf(i)` and room for more. */
  keys: string[];
}

export const deviceOf = (i: number): string => `bench-device-${i}`;

/** Room for the activation scenario's new devices (spread over every license at random). */
const MAX_DEVICES = 100_000;
/** Rows per INSERT: one statement text (prepared once) for the whole bulk load. */
const CHUNK = 1000;

/**
 * Multi-row INSERTs into `table`, compiled by Kysely once per chunk size rather than per chunk:
 * the values come flat, row after row in `columns` order, which is how Kysely lays out parameters.
 */
export function bulkInsert(store: Store, table: keyof Database & string, columns: string[]) {
  const compiled = new Map<number, string>();
  const sqlFor = (rows: number): string => {
    let sql = compiled.get(rows);
    if (!sql) {
      const template = Array.from({ length: rows }, () => Object.fromEntries(columns.map((c) => [c, 0])));
      sql = store.db.insertInto(table).values(template as never).compile().sql;
      compiled.set(rows, sql);
    }
    return sql;
  };
  return (parameters: unknown[]): SqlQuery => ({ sql: sqlFor(parameters.length / columns.length), parameters });
}

/**
 * `count` distinct license keys in the service's format (5 groups of 5 from KEY_ALPHABET), from one
 * random buffer: generating a million keys one call at a time takes longer than inserting them.
 * Sorted, so every index is appended to in order.
 */
export function licenseKeys(count: number): string[] {
  const key = (bytes: Buffer, at: number): string => {
    const chars: string[] = [];
    for (let i = 0; i < 25; i++) {
      if (i > 0 && i % 5 === 0) chars.push('-');
      chars.push(KEY_ALPHABET[bytes[at + i]! % KEY_ALPHABET.length]!);
    }
    return chars.join('');
  };
  const bytes = randomBytes(count * 25);
  const keys = new Set<string>();
  for (let k = 0; k < count; k++) keys.add(key(bytes, k * 25));
  while (keys.size < count) keys.add(key(randomBytes(25), 0)); // a collision: astronomically rare
  return [...keys].sort();
}

/**
 * Seeds one account, API key and product through the services, then `count` licenses with a
 * device each in bulk: multi-row INSERTs inside one unit of work (one transaction, one fsync).
 */
export async function seed(target: { databaseUrl?: string; dataDir: string }, count: number): Promise<Fixture> {
  const store = await openStore({ databaseUrl: target.databaseUrl, dataDir: target.dataDir });
  try {
    // The secret the server will read from the same DATA_DIR (or SECRET_KEY), so sealed keys open there.
    const services = createServices(store, loadConfig({ ...process.env, DATA_DIR: target.dataDir }).secretKey);
    const account = await services.accounts.create({ email: 'bench@example.com', password: 'benchmark password' });
    const { secret } = await services.apiKeys.create(cliPrincipal(account.id), 'bench');
    const product = await services.products.create(cliPrincipal(account.id), { name: 'Bench product' });

    const keys = licenseKeys(count);
    const now = Date.now();
    const licenses = bulkInsert(store, 'licenses', ['key', 'account_id', 'product_id', 'type', 'expires_at', 'revoked', 'email', 'email_normalized', 'max_devices', 'created_at']);
    const devices = bulkInsert(store, 'devices', ['license_key', 'identifier', 'name', 'activation_date']);
    await store.write(async (tx) => {
      for (let start = 0; start < count; start += CHUNK) {
        const licenseValues: unknown[] = [];
        const deviceValues: unknown[] = [];
        for (let i = start; i < Math.min(count, start + CHUNK); i++) {
          licenseValues.push(keys[i], account.id, product.id, 'perpetual', null, flag(false), null, null, MAX_DEVICES, now);
          deviceValues.push(keys[i], deviceOf(i), 'Bench device', now);
        }
        await tx.run(licenses(licenseValues));
        await tx.run(devices(deviceValues));
      }
    });
    // SQLite's search index follows writes in batches (sqlite-search-index.ts): a server started on a
    // fresh bulk load would spend its first minute indexing it, in the measured runs.
    await (store as { searchIndex?: SearchIndexer }).searchIndex?.catchUp();
    return { apiKey: secret, productId: product.id, keys };
  } finally {
    await store.close();
  }
}

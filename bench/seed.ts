import { generateLicenseKey } from '../src/core/license-key.ts';
import { loadConfig } from '../src/config.ts';
import { createServices } from '../src/services.ts';
import { openStore } from '../src/storage/index.ts';
import { flag } from '../src/storage/schema.ts';

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
 * Seeds one account, API key and product through the services, then `count` licenses with a
 * device each in bulk: multi-row INSERTs inside one unit of work (one transaction, one fsync).
 */
export async function seed(target: { databaseUrl?: string; dataDir: string }, count: number): Promise<Fixture> {
  const store = await openStore({ databaseUrl: target.databaseUrl, dataDir: target.dataDir });
  try {
    // The secret the server will read from the same DATA_DIR (or SECRET_KEY), so sealed keys open there.
    const services = createServices(store, loadConfig({ ...process.env, DATA_DIR: target.dataDir }).secretKey);
    const account = await services.accounts.create({ email: 'bench@example.com', password: 'benchmark password' });
    const { secret } = await services.apiKeys.create(account.id, 'bench');
    const product = await services.products.create(account.id, { name: 'Bench product' });

    const keys = Array.from({ length: count }, generateLicenseKey);
    const now = Date.now();
    await store.write(async (tx) => {
      for (let start = 0; start < count; start += CHUNK) {
        const slice = keys.slice(start, start + CHUNK);
        await tx.run(
          store.db.insertInto('licenses').values(
            slice.map((key) => ({
              key,
              user_id: account.id,
              product_id: product.id,
              type: 'perpetual' as const,
              expires_at: null,
              revoked: flag(false),
              email: null,
              email_normalized: null,
              max_devices: MAX_DEVICES,
              created_at: now,
            })),
          ),
        );
        await tx.run(
          store.db
            .insertInto('devices')
            .values(slice.map((key, j) => ({ license_key: key, identifier: deviceOf(start + j), name: 'Bench device', activation_date: now }))),
        );
      }
    });
    return { apiKey: secret, productId: product.id, keys };
  } finally {
    await store.close();
  }
}

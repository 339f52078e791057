/**
 * `node --import tsx bench/operations-inprocess.ts`: license creation with and without an
 * Idempotency-Key, in-process (app.inject, no HTTP or load generator), on SQLite: CPU µs per
 * creation from process.cpuUsage, 20 requests in flight, alternated round by round. Run it in two
 * work trees one after the other for a before/after; with DATABASE_URL set it runs on PostgreSQL.
 *
 *   N=2000 ROUNDS=5 node --import tsx bench/operations-inprocess.ts
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { cliPrincipal } from '../src/core/principal.ts';
import { createServices } from '../src/services.ts';
import { openStore } from '../src/storage/index.ts';

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const IN_FLIGHT = 20;
const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-idem-'));
const databaseUrl = process.env.DATABASE_URL;
const config = loadConfig({ RATE_LIMIT: 'off', DATA_DIR: dataDir, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) });
const store = await openStore({ dataDir, databaseUrl });
const services = createServices(store, config.secretKey, undefined, config);
const app = await buildApp({ config, services, logger: false });
await app.ready();
const account = await services.accounts.create({ email: `bench-${randomUUID()}@example.com`, password: 'correct horse battery', plan: 'plus' });
const { secret } = await services.apiKeys.create(cliPrincipal(account.id), 'bench');
const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
const product = (await app.inject({ method: 'POST', url: '/api/v1/products', headers: auth, payload: '{"name":"Bench"}' })).json<{ id: string }>();
const payload = JSON.stringify({ productId: product.id, type: 'perpetual', maxDevices: 3 });

/** CPU µs per creation over N creations, IN_FLIGHT at a time; both variants build headers alike. */
async function run(withKey: boolean): Promise<number> {
  let sent = 0;
  const started = process.cpuUsage();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (sent++ < N) {
        const headers = { ...auth, [withKey ? 'idempotency-key' : 'x-request-nonce']: randomUUID() };
        const res = await app.inject({ method: 'POST', url: '/api/v1/licenses', headers, payload });
        if (res.statusCode !== 200) throw new Error(res.body);
      }
    }),
  );
  const used = process.cpuUsage(started);
  return (used.user + used.system) / N;
}

await run(false);
await run(true);
const figures = { without: [] as number[], with: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  figures.without.push(await run(false));
  figures.with.push(await run(true));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
console.log(`${store.dialect}: µs CPU per creation without key ${list(figures.without)} | with key ${list(figures.with)} | medians ${median(figures.without).toFixed(0)} / ${median(figures.with).toFixed(0)} = ${(median(figures.with) / median(figures.without)).toFixed(2)}x`);
await app.close();
await store.close();
rmSync(dataDir, { recursive: true, force: true });

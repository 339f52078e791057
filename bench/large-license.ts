/**
 * CPU per public activation on ONE license as its devices grow, in-process (services and SQLite
 * store, no HTTP), with no webhook endpoint (`off`) or an endpoint taking every event (`on`:
 * each activation also queues a delivery whose body shows the license; nothing is sent). Shows
 * whether an activation's cost grows with the number of devices the license already has.
 *
 *   node --import tsx bench/large-license.ts . on 5000 [step]
 *
 * Arguments: a checkout's root (another tree to compare), off|on, devices in all, devices a line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';

const root = resolve(process.argv[2] ?? '.');
const mode = process.argv[3] ?? 'off';
const TOTAL = Number(process.argv[4] ?? 5000);
const STEP = Number(process.argv[5] ?? 1000);
const CONCURRENT = 25;

const { loadConfig } = await import(`${root}/src/config.ts`);
const { createServices } = await import(`${root}/src/services.ts`);
const { openStore } = await import(`${root}/src/storage/index.ts`);
const { cliPrincipal } = await import(`${root}/src/core/principal.ts`);

const dataDir = mkdtempSync(join(tmpdir(), 'tessera-large-license-'));
const config = loadConfig({ DATA_DIR: dataDir, SECRET_KEY: '7e'.repeat(32), WEBHOOK_ALLOW_PRIVATE: 'true' });
const store = await openStore({ dataDir });
try {
  const services = createServices(store, config.secretKey, undefined, config);
  const account = await services.accounts.create({ email: 'large@bench.example', password: 'bench password' });
  const principal = cliPrincipal(account.id);
  const product = await services.products.create(principal, { name: 'Large license bench' });
  const { key } = await services.licenses.create(principal, { productId: product.id, type: 'perpetual', maxDevices: 100_000 });
  // Port 9 (discard): nothing is sent; only the queueing in the activation's unit is measured.
  if (mode === 'on') await services.webhooks.create(principal, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
  let n = 0;
  for (let done = 0; done < TOTAL; done += STEP) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < STEP; i += CONCURRENT) {
      await Promise.all(Array.from({ length: CONCURRENT }, () => services.licenses.publicActivate(key, product.id, { identifier: `d${n++}`, name: 'n' })));
    }
    const used = process.cpuUsage(cpu);
    console.log(`${mode}, devices ${done}-${done + STEP}: ${((used.user + used.system) / STEP).toFixed(0)} µs CPU per activation`);
  }
  const body = await store.read.first(store.db.selectFrom('webhook_deliveries').select(sql<number>`max(length(body))`.as('bytes')));
  if (mode === 'on') console.log(`largest delivery body: ${body?.bytes} bytes`);
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}

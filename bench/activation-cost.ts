/**
 * CPU per public activation in-process (services and SQLite store, no HTTP), with the audit log
 * and webhooks as they run: `off` (no webhook endpoint: the audit entry and the endpoint lookup)
 * or `on` (an endpoint taking every event: also the delivery row and outbox job; nothing is sent,
 * no worker runs). Pass another checkout's root to measure its code the same way (the tree before
 * a change), alternating runs on a shared machine:
 *
 *   node --import tsx bench/activation-cost.ts . off
 *   node --import tsx bench/activation-cost.ts /tmp/tessera-before off
 *
 * A third argument sets how many run at a time (one batch each; default 50; over HTTP the server
 * groups about 15-22 a batch).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? '.');
const mode = process.argv[3] ?? 'off';
const LICENSES = 3000;
const WARMUP = 3000;
const MEASURED = 12_000;
const CONCURRENT = Number(process.argv[4] ?? 50);

const { loadConfig } = await import(`${root}/src/config.ts`);
const { createServices } = await import(`${root}/src/services.ts`);
const { openStore } = await import(`${root}/src/storage/index.ts`);
const { cliPrincipal } = await import(`${root}/src/core/principal.ts`);

const dataDir = mkdtempSync(join(tmpdir(), 'tessera-activation-'));
const config = loadConfig({ DATA_DIR: dataDir, SECRET_KEY: '7e'.repeat(32), WEBHOOK_ALLOW_PRIVATE: 'true' });
const store = await openStore({ dataDir });
try {
  const services = createServices(store, config.secretKey, undefined, config);
  const account = await services.accounts.create({ email: 'activation@bench.example', password: 'bench password' });
  const principal = cliPrincipal(account.id);
  const product = await services.products.create(principal, { name: 'Activation bench' });
  const keys: string[] = [];
  for (let i = 0; i < LICENSES; i++) keys.push((await services.licenses.create(principal, { productId: product.id, type: 'perpetual', maxDevices: 100_000 })).key);
  // Port 9 (discard): nothing is sent; only the queueing in the activation's unit is measured.
  if (mode === 'on') await services.webhooks.create(principal, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
  let n = 0;
  const activate = async (count: number) => {
    for (let done = 0; done < count; done += CONCURRENT) {
      await Promise.all(Array.from({ length: CONCURRENT }, () => services.licenses.publicActivate(keys[n % keys.length]!, product.id, { identifier: `d${n++}`, name: 'n' })));
    }
  };
  await activate(WARMUP);
  const cpu = process.cpuUsage();
  await activate(MEASURED);
  const used = process.cpuUsage(cpu);
  console.log(`${root} ${mode}: ${((used.user + used.system) / MEASURED).toFixed(1)} µs CPU per activation (user ${(used.user / MEASURED).toFixed(1)}, system ${(used.system / MEASURED).toFixed(1)})`);
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}

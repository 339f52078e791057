/**
 * For in-process benches that measure another checkout's code (`bench/activation-cost.ts`,
 * `bench/large-license.ts`): that tree's services over a fresh SQLite store in a temporary
 * directory, an account with a product, and, when `webhooks` is on, an endpoint taking every event
 * at port 9 (discard: nothing is sent; only the queueing in each change's unit is measured).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export async function withTree(rootArg: string | undefined, options: { webhooks: boolean }, bench: (tree: { root: string; services: any; store: any; principal: unknown; productId: string }) => Promise<void>): Promise<void> {
  const root = resolve(rootArg ?? '.');
  const { loadConfig } = await import(`${root}/src/config.ts`);
  const { createServices } = await import(`${root}/src/services.ts`);
  const { openStore } = await import(`${root}/src/storage/index.ts`);
  const { cliPrincipal } = await import(`${root}/src/core/principal.ts`);

  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
  const config = loadConfig({ DATA_DIR: dataDir, SECRET_KEY: '7e'.repeat(32), WEBHOOK_ALLOW_PRIVATE: 'true' });
  const store = await openStore({ dataDir });
  try {
    const services = createServices(store, config.secretKey, undefined, config);
    const account = await services.accounts.create({ email: 'bench@bench.example', password: 'bench password' });
    const principal = cliPrincipal(account.id);
    const product = await services.products.create(principal, { name: 'In-process bench' });
    if (options.webhooks) await services.webhooks.create(principal, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    await bench({ root, services, store, principal, productId: product.id });
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

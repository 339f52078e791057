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
import { withTree } from './in-process-tree.ts';

const mode = process.argv[3] ?? 'off';
const LICENSES = 3000;
const WARMUP = 3000;
const MEASURED = 12_000;
const CONCURRENT = Number(process.argv[4] ?? 50);

await withTree(process.argv[2], { webhooks: mode === 'on' }, async ({ root, services, principal, productId }) => {
  const keys: string[] = [];
  for (let i = 0; i < LICENSES; i++) keys.push((await services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 100_000 })).key);
  let n = 0;
  const activate = async (count: number) => {
    for (let done = 0; done < count; done += CONCURRENT) {
      await Promise.all(Array.from({ length: CONCURRENT }, () => services.licenses.publicActivate(keys[n % keys.length]!, productId, { identifier: `d${n++}`, name: 'n' })));
    }
  };
  await activate(WARMUP);
  const cpu = process.cpuUsage();
  await activate(MEASURED);
  const used = process.cpuUsage(cpu);
  console.log(`${root} ${mode}: ${((used.user + used.system) / MEASURED).toFixed(1)} µs CPU per activation (user ${(used.user / MEASURED).toFixed(1)}, system ${(used.system / MEASURED).toFixed(1)})`);
});

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
import { sql } from 'kysely';
import { withTree } from './in-process-tree.ts';

const mode = process.argv[3] ?? 'off';
const TOTAL = Number(process.argv[4] ?? 5000);
const STEP = Number(process.argv[5] ?? 1000);
const CONCURRENT = 25;

await withTree(process.argv[2], { webhooks: mode === 'on' }, async ({ services, store, principal, productId }) => {
  const { key } = await services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 100_000 });
  let n = 0;
  for (let done = 0; done < TOTAL; done += STEP) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < STEP; i += CONCURRENT) {
      await Promise.all(Array.from({ length: CONCURRENT }, () => services.licenses.publicActivate(key, productId, { identifier: `d${n++}`, name: 'n' })));
    }
    const used = process.cpuUsage(cpu);
    console.log(`${mode}, devices ${done}-${done + STEP}: ${((used.user + used.system) / STEP).toFixed(0)} µs CPU per activation`);
  }
  if (mode !== 'on') return;
  const body = await store.read.first(store.db.selectFrom('webhook_deliveries').select(sql<number>`max(length(body))`.as('bytes')));
  console.log(`largest delivery body: ${body?.bytes} bytes`);
});

import { openStore } from '../src/storage/index.ts';
import { SqlOverviewRepository } from '../src/modules/overview/repository.ts';
const store = await openStore({ dataDir: '/tmp/wt36-bench/sqlite1m' });
const acc = (await store.read.first(store.db.selectFrom('licenses').select('account_id').limit(1)))!.account_id;
const repo = new SqlOverviewRepository(store);
let after = ''; let n = 0; const times: number[] = []; const t0 = performance.now();
for (;;) { const s0 = performance.now(); const s = await repo.tallySlice(acc, after, 2500, Date.now()); times.push(performance.now() - s0); n += s.licenses; if (!s.lastKey) break; after = s.lastKey; }
times.sort((a, b) => a - b);
console.log('licenses', n, 'total ms', (performance.now() - t0).toFixed(0), 'slice p50', times[times.length >> 1]!.toFixed(1), 'max', times.at(-1)!.toFixed(1));
const r0 = performance.now(); await repo.revenueSince(acc, 0); console.log('revenue', (performance.now() - r0).toFixed(1));
await store.close();

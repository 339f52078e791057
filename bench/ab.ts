/**
 * Before/after on one machine: the same scenarios against two builds of the server (two work
 * trees, each built with `npm run build`), alternated round by round on one seeded store, so
 * both see the same machine. Prints server CPU µs per request (the figure the machine's other
 * load disturbs least) per round and the median of each.
 *
 *   taskset -c 1 node --import tsx bench/ab.ts --a /tmp/before --b . --scenarios "public validate" --rounds 4
 *
 * Extra server environment with --env KEY=VALUE,KEY=VALUE (e.g. LOG_LEVEL=warn). With --paced, a
 * scenario that has a pacedRate is measured at that offered rate instead of at saturation;
 * --node-flags replaces the server's node flags (npm start's: "--enable-source-maps --max-semi-space-size=4 --max-old-space-size=2000");
 * --node-flags-a / --node-flags-b add flags to one side only (e.g. a V8 option against none, same build).
 * --database-url runs both on an empty PostgreSQL database instead (createdb one first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startChild } from './child.ts';
import { measure } from './load.ts';
import { scenarios } from './scenarios.ts';
import { seed } from './seed.ts';

const { values: flags } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: '.' },
    scenarios: { type: 'string', default: 'public validate' },
    rounds: { type: 'string', default: '4' },
    licenses: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    env: { type: 'string', default: '' },
    paced: { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: '--max-semi-space-size=4 --max-old-space-size=2000' },
    'env-a': { type: 'string', default: '' },
    'env-b': { type: 'string', default: '' },
    'node-flags-a': { type: 'string', default: '' },
    'node-flags-b': { type: 'string', default: '' },
    /** An empty PostgreSQL database to seed and run both trees on, instead of SQLite. */
    'database-url': { type: 'string' },
  },
});
if (!flags.a) throw new Error('--a <work tree> is required');
// Split at the first '=' only: a value may hold one (NODE_OPTIONS=--max-semi-space-size=8).
const parseEnv = (list: string) => Object.fromEntries(list.split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const trees = [
  { name: 'A', dir: resolve(flags.a), env: parseEnv(flags['env-a']), nodeFlags: flags['node-flags-a'] },
  { name: 'B', dir: resolve(flags.b), env: parseEnv(flags['env-b']), nodeFlags: flags['node-flags-b'] },
];
const chosen = flags.scenarios.split(',').map((n) => scenarios.find((s) => s.name === n.trim()) ?? (() => { throw new Error(`unknown scenario ${n}`); })());
const load = { connections: 50, duration: Number(flags.duration), warmup: Number(flags.warmup) };
const dataDir = mkdtempSync(join(tmpdir(), 'tessera-ab-'));
const results = new Map<string, number[]>();
const helpers = await Promise.all(chosen.map((s) => s.start?.()));
const helperEnv = Object.assign({}, ...helpers.map((h) => h?.env ?? {}));
try {
  const databaseUrl = flags['database-url'];
  const fixture = await seed({ dataDir, databaseUrl }, Number(flags.licenses));
  for (let round = 1; round <= Number(flags.rounds); round++) {
    for (const tree of round % 2 ? trees : [...trees].reverse()) {
      const child = await startChild({
        args: [...`${flags['node-flags']} ${tree.nodeFlags}`.split(' ').filter(Boolean), join(tree.dir, 'dist/main.js')],
        env: { RATE_LIMIT: 'off', SECRET_KEY: '7e'.repeat(32), DATA_DIR: dataDir, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), ...helperEnv, ...parseEnv(flags.env), ...tree.env },
        core: 0,
        readyPath: '/readyz',
        stdoutFile: join(dataDir, `${tree.name}.log`),
      });
      try {
        for (const scenario of chosen) {
          const ctx = { store: databaseUrl ? ('postgres' as const) : ('sqlite' as const), baseUrl: child.baseUrl, fixture };
          await scenario.prepare?.(ctx);
          const rate = flags.paced ? scenario.pacedRate : undefined;
          const r = await measure(child, scenario.request(ctx), { ...load, rate, distinct: scenario.distinct });
          const key = `${scenario.name} | ${tree.name}`;
          results.set(key, [...(results.get(key) ?? []), r.cpuPerRequestUs]);
          console.log(`round ${round} ${tree.name} ${scenario.name}: ${Math.round(r.rps)} req/s, ${r.cpuPerRequestUs.toFixed(1)} µs/req, p50 ${r.p50} ms, p99 ${r.p99} ms, CPU ${Math.round(r.cpuPercent)}%, anon ${Math.round(r.anonMiB)} MiB`);
        }
      } finally {
        await child.stop();
      }
    }
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  for (const helper of helpers) await helper?.stop();
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
for (const [key, xs] of results) console.log(`${key}: µs/req ${xs.map((x) => x.toFixed(1)).join(', ')}; median ${median(xs).toFixed(1)}`);

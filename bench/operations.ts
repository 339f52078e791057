/**
 * `npm run bench:ops`: the costs of issue 11's operations features, each measured beside its
 * baseline in one run, alternated (A B A B) so drift on a shared machine hits both alike.
 *
 * - License creation with a unique `Idempotency-Key` per request vs without (target: within 10%),
 *   on one server, in alternated slices (`slices`).
 * - Public validate with `REDIS_URL` and limits on vs limits off (target: at least 0.8x), and with
 *   limits in memory for reference.
 * - The metrics hook (`Metrics.observe`) per request, timed in this process.
 *
 * Servers run compiled (`dist/main.js`, as `npm start`) on SQLite with 10,000 seeded licenses;
 * figures are server CPU µs per answered request (from /proc, the figure least disturbed by
 * other load) and requests per second.
 *
 *   npm run bench:ops -- [--duration 5] [--rounds 2] [--only creation|validate] [--redis redis://127.0.0.1:6379]
 *   npm run bench:ops -- --only creation --rounds 12 --duration 2     # the figure in docs/benchmarks.md
 *
 * `--base <work tree>` runs every variant on that build too; it must know every migration of the
 * seeded store (this tree's).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { Metrics } from '../src/http/metrics.ts';
import { openStore } from '../src/storage/index.ts';
import { Outbox } from '../src/modules/outbox/outbox.ts';
import { startChild } from './child.ts';
import { type LoadResult, measure } from './load.ts';
import { deviceOf, seed } from './seed.ts';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    only: { type: 'string' },
    // Another work tree (built here first): every variant also runs on it, alternated (before/after).
    base: { type: 'string' },
  },
});
const load = { duration: Number(flags.duration), warmup: Number(flags.warmup), connections: Number(flags.connections) };
const rounds = Number(flags.rounds);
const json = { 'content-type': 'application/json' };
const prefix = `tessera-bench:${randomBytes(4).toString('hex')}:`;

type Variant = { name: string; env: Record<string, string>; request: autocannon.Request; main?: string; distinct?: boolean };

/** Runs each variant `rounds` times, alternated, each on a fresh server; returns the mean per variant. */
async function compare(dataDir: string, ours: Variant[]): Promise<Map<string, LoadResult>> {
  const variants = flags.base ? ours.flatMap((v) => [{ ...v, name: `${v.name} (base)`, main: join(flags.base!, 'dist/main.js') }, v]) : ours;
  const runs = new Map<string, LoadResult[]>(variants.map((v) => [v.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const v of variants) {
      const child = await startChild({ args: ['--max-semi-space-size=4', '--max-old-space-size=2000', v.main ?? 'dist/main.js'], env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT: 'off', ...v.env }, readyPath: '/healthz' });
      try {
        const r = await measure(child, v.request, { ...load, distinct: v.distinct });
        runs.get(v.name)!.push(r);
        console.error(`  ${v.name}: ${r.rps.toFixed(0)} req/s, ${r.cpuPerRequestUs.toFixed(0)} µs CPU/request, failed ${r.failed}`);
      } finally {
        await child.stop();
      }
    }
  }
  return meanOf(runs);
}

/**
 * Variants that differ only in their requests (license creation with and without a key) run on one
 * server per tree, alternated slice by slice (A B, then B A, ...): the machine's drift, the tables'
 * growth and the JIT's state hit both alike, where a fresh server per variant and round did not (on
 * a noisy machine identical rounds moved by 15% and more). `rounds` pairs of `duration`-second slices
 * after one warm-up of each; returns the mean per variant, and prints the median of the pairs' ratios.
 */
async function slices(dataDir: string, ours: Variant[]): Promise<Map<string, LoadResult>> {
  const trees = flags.base ? [{ suffix: ' (base)', main: join(flags.base, 'dist/main.js') }, { suffix: '', main: 'dist/main.js' }] : [{ suffix: '', main: 'dist/main.js' }];
  const runs = new Map<string, LoadResult[]>();
  for (const tree of trees) {
    const child = await startChild({ args: ['--max-semi-space-size=4', '--max-old-space-size=2000', tree.main], env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT: 'off', ...ours[0]!.env }, readyPath: '/healthz' });
    try {
      for (const v of ours) await measure(child, v.request, { ...load, duration: load.warmup, warmup: 0, distinct: v.distinct });
      for (let round = 0; round < rounds; round++) {
        for (const v of round % 2 ? [...ours].reverse() : ours) {
          const r = await measure(child, v.request, { ...load, warmup: 0, distinct: v.distinct });
          const name = `${v.name}${tree.suffix}`;
          runs.set(name, [...(runs.get(name) ?? []), r]);
          console.error(`  ${name}: ${r.rps.toFixed(0)} req/s, ${r.cpuPerRequestUs.toFixed(0)} µs CPU/request, failed ${r.failed}`);
        }
      }
    } finally {
      await child.stop();
    }
    const [first, ...others] = ours.map((v) => runs.get(`${v.name}${tree.suffix}`)!);
    for (const [i, other] of others.entries()) {
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const rps = median(other.map((r, k) => r.rps / first![k]!.rps));
      const cpu = median(other.map((r, k) => r.cpuPerRequestUs / first![k]!.cpuPerRequestUs));
      console.error(`  ${ours[i + 1]!.name}${tree.suffix} against ${ours[0]!.name}, median of ${rounds} slice pairs: ${rps.toFixed(2)}x req/s, ${cpu.toFixed(2)}x CPU per request`);
    }
  }
  return meanOf(runs);
}

function meanOf(runs: Map<string, LoadResult[]>): Map<string, LoadResult> {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return new Map(
    [...runs].map(([name, rs]) => [name, { ...rs[0]!, rps: mean(rs.map((r) => r.rps)), cpuPerRequestUs: mean(rs.map((r) => r.cpuPerRequestUs)), failed: rs.reduce((a, r) => a + r.failed, 0) }]),
  );
}

function row(name: string, r: LoadResult, base: LoadResult): string {
  return `| ${name} | ${r.rps.toFixed(0)} | ${(r.rps / base.rps).toFixed(2)}x | ${r.cpuPerRequestUs.toFixed(0)} | ${(r.cpuPerRequestUs / base.cpuPerRequestUs).toFixed(2)}x | ${r.failed} |`;
}

/** The metrics hook's own cost: observe() on a route and status already seen, per call. */
async function metricsHookCost(dataDir: string): Promise<number> {
  const store = await openStore({ dataDir });
  try {
    const outbox = new Outbox(store);
    const webhooks = { outcomes: { succeeded: 0, retrying: 0, failed: 0 }, backlog: () => outbox.pending('webhook'), clock: Date.now };
    const metrics = new Metrics({ store, outbox, webhooks });
    const req = { method: 'POST', routeOptions: { url: '/api/v1/public/licenses/validate' }, errorCode: null } as never;
    const reply = { statusCode: 200, elapsedTime: 1.2 } as never;
    const n = 2_000_000;
    for (let i = 0; i < 100_000; i++) metrics.observe(req, reply);
    const started = process.cpuUsage();
    for (let i = 0; i < n; i++) metrics.observe(req, reply);
    const used = process.cpuUsage(started);
    return ((used.user + used.system) * 1000) / n;
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  for (const dir of flags.base ? [flags.base, '.'] : ['.']) {
    if (spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit', cwd: dir }).status !== 0) throw new Error(`build failed in ${dir}`);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-ops-'));
  const redis = new Redis(flags.redis);
  try {
    const fixture = await seed({ dataDir }, 10_000);
    const auth = { ...json, authorization: `Bearer ${fixture.apiKey}` };
    const createBody = JSON.stringify({ productId: fixture.productId, type: 'perpetual', maxDevices: 3 });
    const create = (withKey: boolean): autocannon.Request => ({
      method: 'POST',
      path: '/api/v1/licenses',
      headers: auth,
      body: createBody,
      // Both variants build each request alike (a fresh UUID header), so the load generator costs
      // the same and the server sees the same concurrency: only the header's name differs.
      setupRequest: (req) => ({ ...req, headers: { ...auth, [withKey ? 'idempotency-key' : 'x-request-nonce']: randomUUID() } }),
    });
    const runs = (part: string) => flags.only === undefined || flags.only === part;
    let creation = new Map<string, LoadResult>();
    if (runs('creation')) {
      console.error('License creation, with and without Idempotency-Key:');
      creation = await slices(dataDir, [
        { name: 'without key', env: {}, request: create(false) },
        { name: 'with Idempotency-Key', env: {}, request: create(true), distinct: true },
      ]);
    }

    const validate: autocannon.Request = {
      method: 'POST',
      path: '/api/v1/public/licenses/validate',
      headers: json,
      setupRequest: (req) => {
        const i = Math.floor(Math.random() * fixture.keys.length);
        return { ...req, body: `{"licenseKey":"${fixture.keys[i]}","deviceIdentifier":"${deviceOf(i)}","productId":"${fixture.productId}"}` };
      },
    };
    // Limits high enough never to refuse: what is measured is counting, not 429s.
    const limitsOn = { RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000' };
    let validation = new Map<string, LoadResult>();
    if (runs('validate')) {
      console.error('Public validate, limits off / in memory / in Redis:');
      validation = await compare(dataDir, [
        { name: 'limits off', env: {}, request: validate },
        { name: 'limits in memory', env: limitsOn, request: validate },
        { name: 'limits in Redis', env: { ...limitsOn, REDIS_URL: flags.redis, REDIS_KEY_PREFIX: prefix }, request: validate },
      ]);
    }
    const hookNs = await metricsHookCost(dataDir);

    const header = '| variant | req/s | vs baseline | server CPU µs/request | vs baseline | failed |\n|---|---|---|---|---|---|';
    const c0 = creation.get('without key')!;
    const v0 = validation.get('limits off')!;
    console.log(header);
    // Each against its own build's baseline.
    const baseOf = (all: Map<string, LoadResult>, name: string, first: LoadResult) => (name.endsWith(' (base)') ? [...all.values()][0]! : first);
    for (const [n, r] of creation) console.log(row(`create license, ${n}`, r, baseOf(creation, n, c0)));
    for (const [n, r] of validation) console.log(row(`public validate, ${n}`, r, baseOf(validation, n, v0)));
    console.log(`\nMetrics hook (Metrics.observe, known route and status): ${hookNs.toFixed(0)} ns CPU per request.`);
  } finally {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

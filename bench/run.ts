/**
 * `npm run bench`: the service under load, beside a bare Fastify endpoint, in one run.
 *
 * For each store (SQLite in a temporary DATA_DIR, PostgreSQL in a fresh database that is dropped
 * afterwards) and each license count: seed (bench/seed.ts), start the server as `npm start` runs it
 * (package.json; its build step first) as a child pinned to core 0, run every scenario with autocannon from this process pinned to core 1 (it re-executes
 * itself under `taskset -c 1`), stop the child. The bare endpoint (bench/bare-server.ts) runs the
 * same way before and after the stores; ratios are to the mean of its two runs. On each SQLite store
 * it also serves the reference routes (bench/reference-routes.ts), loaded with public validate's
 * requests: the ceiling for that route on this machine. Prints a markdown table and the targets of
 * issues 2 and 3.
 *
 * Adding a scenario: append to `scenarios` in bench/scenarios.ts an object with a `name`, a
 * `request(ctx)` returning an autocannon request (vary it per request in `setupRequest`), a
 * `check(status, body)` for one sample answer, and optionally `prepare(ctx)` to set up data
 * beyond the seed (ctx has the base URL, the API key, the product id and the license keys, each
 * license i with the active device `deviceOf(i)`). `--scenarios` selects by name. `start()` runs a
 * helper the scenario needs beside the server (the Stripe double) once, its `env` going to every
 * server child; `pacedRate` also measures the scenario at that offered rate (open loop).
 *
 *   npm run bench -- --quick
 *   npm run bench -- --stores sqlite --sqlite-licenses 10000,100000,1000000 --duration 15
 *   npm run bench -- --stores postgres --pg-licenses 100000 --cpu-prof /tmp/prof
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startChild } from './child.ts';
import { type LoadOptions, type LoadResult, measure, sample } from './load.ts';
import { type Scenario, type StoreKind, scenarios } from './scenarios.ts';
import { seed } from './seed.ts';
import { measureSigning } from './signing.ts';
import { tokenTargets } from './token-scenarios.ts';
import { measureWebhookDeliveries } from './webhook-deliveries.ts';
import { createServer } from 'node:http';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string', default: '50' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    'sqlite-licenses': { type: 'string' },
    'pg-licenses': { type: 'string' },
    scenarios: { type: 'string' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
    'cpu-prof': { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    webhooks: { type: 'boolean', default: false },
    'webhook-deliveries': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (flags.help) {
  console.log(`npm run bench -- [options]
  --quick                 3 s runs, 1 s warm-up, 10,000 licenses (development)
  --duration <s>          measured seconds per scenario (default 10)
  --warmup <s>            unmeasured seconds before each (default 3)
  --connections <n>       concurrent connections (default 50)
  --stores <list>         sqlite,postgres (default both)
  --sqlite-licenses <list> license counts on SQLite (default 10000,100000,1000000)
  --pg-licenses <list>    license counts on PostgreSQL (default 100000)
  --scenarios <list>      scenario names, comma-separated (default all)
  --database-url <url>    PostgreSQL server to create the bench database on (default BENCH_DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --cpu-prof <dir>        write V8 CPU profiles of each server child into <dir>
  --no-pin                do not pin the server and the load generator to separate cores
  --webhooks              give the bench account a webhook endpoint taking every event (a loopback
                          receiver in this process): the scenarios run with webhook deliveries on
  --webhook-deliveries <n> also measure webhook deliveries/s: n deliveries to a loopback receiver, per store`);
  process.exit(0);
}

const SERVER_CORE = 0;
const LOAD_CORE = 1;
const pin = !flags['no-pin'];

// The load generator runs on its own core: re-execute under taskset once.
if (pin && !process.env.BENCH_PINNED) {
  const res = spawnSync('taskset', ['-c', String(LOAD_CORE), process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_PINNED: '1' },
  });
  process.exit(res.status ?? 1);
}

const counts = (list: string | undefined, fallback: number[]): number[] =>
  list ? list.split(',').map((s) => Number(s.replace(/_/g, ''))) : fallback;

const quick = flags.quick;
const load: LoadOptions = {
  connections: Number(flags.connections),
  duration: Number(flags.duration ?? (quick ? 3 : 10)),
  warmup: Number(flags.warmup ?? (quick ? 1 : 3)),
};
const stores = flags.stores.split(',') as StoreKind[];
const licenseCounts: Record<StoreKind, number[]> = {
  sqlite: counts(flags['sqlite-licenses'], quick ? [10_000] : [10_000, 100_000, 1_000_000]),
  postgres: counts(flags['pg-licenses'], quick ? [10_000] : [100_000]),
};
const selected: Scenario[] = flags.scenarios
  ? flags.scenarios.split(',').map((name) => {
      const found = scenarios.find((s) => s.name === name.trim());
      if (!found) throw new Error(`Unknown scenario "${name}"; known: ${scenarios.map((s) => s.name).join(', ')}`);
      return found;
    })
  : scenarios;

for (const s of stores) if (s !== 'sqlite' && s !== 'postgres') throw new Error(`Unknown store "${s}"`);
for (const n of Object.values(licenseCounts).flat()) if (!Number.isInteger(n) || n < 1) throw new Error(`Bad license count ${n}`);

const ENV: Record<string, string> = {
  RATE_LIMIT: 'off',
  LOG_LEVEL: 'warn',
  SECRET_KEY: '7e'.repeat(32),
  // --webhooks: the receiver is on loopback.
  ...(flags.webhooks ? { WEBHOOK_ALLOW_PRIVATE: 'true' } : {}),
};

/** --webhooks: a receiver answering 204 to every delivery, on the load core (this process). */
async function startReceiver(): Promise<{ url: string; received: () => number; close: () => void }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, received: () => received, close: () => server.close() };
}
const deliveryRows: { store: StoreKind; deliveries: number; perSecond: number; cpuPerDeliveryUs: number }[] = [];
/**
 * How `npm start` runs the server (package.json): the bench measures what runs in production. Its
 * node flags (not its module loaders) also go to the bare endpoint, which needs tsx for its own file.
 */
function startCommand(): { server: string[]; flags: string[]; prestart: boolean } {
  const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
  const [node, ...server] = scripts.start!.trim().split(/\s+/);
  if (node !== 'node') throw new Error(`npm start must run node directly to be benchmarked: ${scripts.start}`);
  const flags: string[] = [];
  for (let i = 0; i < server.length; i++) {
    if (['--import', '--require', '-r', '--loader'].includes(server[i]!)) i++;
    else if (server[i]!.startsWith('-')) flags.push(server[i]!);
  }
  return { server, flags, prestart: scripts.prestart !== undefined };
}
const START = startCommand();
let profileSerial = 0;
// One directory per child: the main thread and any loader thread each write a profile.
const profiling = (label: string): string[] =>
  flags['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(flags['cpu-prof'], `${profileSerial++}-${label}`)}`] : [];
const say = (message: string) => process.stderr.write(`${message}\n`);

interface Row extends LoadResult {
  store: StoreKind | 'bare' | 'reference';
  licenses: number | null;
  scenario: string;
}
const rows: Row[] = [];
const peaks: { label: string; hwmMiB: number }[] = [];

function startBare(label: string, env: Record<string, string> = {}) {
  const args = [...START.flags, ...profiling(label), '--import', 'tsx', 'bench/bare-server.ts'];
  return startChild({ args, env: { ...ENV, ...env }, core: pin ? SERVER_CORE : undefined, readyPath: '/bare' });
}

async function runBare(): Promise<LoadResult> {
  const child = await startBare('bare');
  try {
    return await measure(child, { method: 'GET', path: '/bare' }, load);
  } finally {
    await child.stop();
  }
}

/** The reference routes of bench/bare-server.ts on this store, with public validate's requests. */
const REFERENCES = [
  { path: '/reference/answer', scenario: 'POST, fixed answer (no service)' },
  { path: '/reference/lookup', scenario: 'POST + the validation statement (no service layers)' },
];

async function runReferences(dataDir: string, count: number, ctx: Parameters<Scenario['request']>[0]): Promise<void> {
  const validate = scenarios.find((s) => s.name === 'public validate')!;
  const child = await startBare(`reference-${count}`, { DATA_DIR: dataDir });
  try {
    for (const { path, scenario } of REFERENCES) {
      const request = { ...validate.request({ ...ctx, baseUrl: child.baseUrl }), path };
      const probe = await sample(child.baseUrl, request);
      const problem = validate.check(probe.status, probe.body);
      if (problem) throw new Error(`${scenario}: ${problem}`);
      const result = await measure(child, request, load);
      rows.push({ store: 'reference', licenses: count, scenario, ...result });
      say(`  reference, ${scenario}: ${Math.round(result.rps)} req/s (${Math.round(result.cpuPerRequestUs)} µs/req)`);
    }
  } finally {
    await child.stop();
  }
}

/** A temporary home for one store: a data directory, or a database on the PostgreSQL server. */
async function withTarget<T>(store: StoreKind, use: (target: { dataDir: string; databaseUrl?: string }) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
  try {
    if (store === 'sqlite') return await use({ dataDir });
    const admin = new pg.Client({ connectionString: flags['database-url'] });
    await admin.connect();
    const name = `tessera_bench_${process.pid}_${Date.now()}`;
    try {
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(flags['database-url']);
      url.pathname = `/${name}`;
      return await use({ dataDir, databaseUrl: url.toString() });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function analyze(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('ANALYZE');
  await client.end();
}

async function runStore(store: StoreKind, count: number): Promise<void> {
  await withTarget(store, async (target) => {
    const started = Date.now();
    const fixture = await seed(target, count);
    if (target.databaseUrl) await analyze(target.databaseUrl);
    say(`  seeded ${count.toLocaleString('en-US')} licenses in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const env: Record<string, string> = { ...ENV, DATA_DIR: target.dataDir };
    if (target.databaseUrl) env.DATABASE_URL = target.databaseUrl;
    const args = [...profiling(`${store}-${count}`), ...START.server];
    const child = await startChild({ args, env, core: pin ? SERVER_CORE : undefined, readyPath: '/readyz' });
    const receiver = flags.webhooks ? await startReceiver() : undefined;
    try {
      if (receiver) {
        const res = await fetch(`${child.baseUrl}/api/v1/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${fixture.apiKey}` },
          body: JSON.stringify({ url: receiver.url, events: ['*'] }),
        });
        if (res.status !== 200) throw new Error(`--webhooks: creating the endpoint answered ${res.status} ${await res.text()}`);
      }
      for (const scenario of selected) {
        const ctx = { store, baseUrl: child.baseUrl, fixture };
        await scenario.prepare?.(ctx);
        const request = scenario.request(ctx);
        const probe = await sample(child.baseUrl, request);
        const problem = scenario.check(probe.status, probe.body);
        if (problem) throw new Error(`${scenario.name} on ${store}: ${problem}`);
        const result = await measure(child, request, load);
        rows.push({ store, licenses: count, scenario: scenario.name, ...result });
        say(`  ${scenario.name}: ${Math.round(result.rps)} req/s, p99 ${result.p99} ms, server CPU ${Math.round(result.cpuPercent)}% (${Math.round(result.cpuPerRequestUs)} µs/req), load CPU ${Math.round(result.loadCpuPercent)}%`);
        if (scenario.pacedRate) {
          const paced = await measure(child, request, { ...load, rate: scenario.pacedRate });
          rows.push({ store, licenses: count, scenario: `${scenario.name} @ ${scenario.pacedRate}/s`, ...paced });
          say(`  ${scenario.name} @ ${scenario.pacedRate}/s: ${Math.round(paced.rps)} req/s, p99 ${paced.p99} ms, failed ${paced.failed}`);
        }
      }
      peaks.push({ label: `${store}, ${count.toLocaleString('en-US')} licenses`, hwmMiB: child.memory().hwmMiB });
      if (receiver) say(`  webhook deliveries received during the scenarios: ${receiver.received()}`);
    } finally {
      await child.stop();
      receiver?.close();
    }
    if (store === 'sqlite' && selected.some((s) => s.name === 'public validate')) {
      await runReferences(target.dataDir, count, { store, baseUrl: '', fixture });
    }
  });
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function report(bare: number): string {
  const lines = [
    '| Store | Licenses | Scenario | req/s | p50 ms | p99 ms | × bare | failed | server CPU % | server µs/req | load CPU % | peak RSS MiB |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const ratio = r.store === 'bare' ? '1.00' : (r.rps / bare).toFixed(2);
    lines.push(
      `| ${r.store} | ${r.licenses === null ? '' : fmt(r.licenses)} | ${r.scenario} | ${fmt(r.rps)} | ${r.p50} | ${r.p99} | ${ratio} | ${r.failed} | ${fmt(r.cpuPercent)} | ${fmt(r.cpuPerRequestUs)} | ${fmt(r.loadCpuPercent)} | ${fmt(r.rssMiB)} |`,
    );
  }
  return lines.join('\n');
}

function targets(bare: number): string[] {
  const find = (store: StoreKind, scenario: string, licenses?: number) =>
    rows.find((r) => r.store === store && r.scenario === scenario && (licenses === undefined || r.licenses === licenses));
  const out: string[] = [];
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const validate = find('sqlite', 'public validate', 100_000);
  if (validate) {
    out.push(`- Public validate, SQLite, 100,000 licenses: ${(validate.rps / bare).toFixed(2)}x bare (target 0.5x), p99 ${validate.p99} ms (target < 15): ${verdict(validate.rps / bare >= 0.5 && validate.p99 < 15)}`);
    const ceilings = rows.filter((r) => r.store === 'reference' && r.licenses === validate.licenses);
    if (ceilings.length > 0) out.push(`  (reference routes, same requests: ${ceilings.map((r) => `${r.scenario} ${(r.rps / bare).toFixed(2)}x`).join('; ')})`);
  }
  const activate = find('sqlite', 'public activate', 100_000) ?? find('sqlite', 'public activate');
  if (activate) out.push(`- Public activate, SQLite (synchronous=FULL): ${(activate.rps / bare).toFixed(2)}x bare (target 0.15x): ${verdict(activate.rps / bare >= 0.15)}`);
  const small = find('sqlite', 'public validate', 10_000);
  const large = find('sqlite', 'public validate', 1_000_000);
  if (small && large) {
    const drift = (large.rps - small.rps) / small.rps;
    out.push(`- Public validate, SQLite, 1,000,000 vs 10,000 licenses: ${(drift * 100).toFixed(1)}% (target within 10%): ${verdict(Math.abs(drift) <= 0.1)}`);
  }
  for (const store of ['postgres'] as const) {
    for (const name of ['public validate', 'public activate']) {
      const r = find(store, name);
      if (r) out.push(`- ${name}, PostgreSQL, ${fmt(r.licenses ?? 0)} licenses: ${(r.rps / bare).toFixed(2)}x bare, p99 ${r.p99} ms (reported beside SQLite)`);
    }
  }
  if (peaks.length > 0) {
    const worst = Math.max(...peaks.map((p) => p.hwmMiB));
    out.push(`- Server peak resident memory (VmHWM) under load: ${fmt(worst)} MiB (target < 200): ${verdict(worst < 200)}`);
  }
  return out;
}

async function main(): Promise<void> {
  say(`bench: ${load.connections} connections, ${load.duration} s measured after ${load.warmup} s warm-up, server on core ${SERVER_CORE}, load on core ${LOAD_CORE}${pin ? '' : ' (unpinned)'}, server as npm start: node ${START.server.join(' ')}`);
  // npm start's build step (when it has one), once, so the bench runs the current code.
  if (START.prestart && spawnSync('npm', ['run', '--silent', 'prestart'], { stdio: 'inherit' }).status !== 0) throw new Error('npm run prestart failed');
  // What the selected scenarios need beside the server (the Stripe double), for the whole run.
  const helpers = [];
  for (const scenario of selected) {
    const started = await scenario.start?.();
    if (started) {
      Object.assign(ENV, started.env);
      helpers.push(started);
    }
  }
  try {
    await runAll();
  } finally {
    for (const helper of helpers) await helper.stop();
  }
}

async function runAll(): Promise<void> {
  say('bare Fastify endpoint');
  const bareBefore = await runBare();
  say(`  ${Math.round(bareBefore.rps)} req/s, server CPU ${Math.round(bareBefore.cpuPercent)}% (${Math.round(bareBefore.cpuPerRequestUs)} µs/req), load CPU ${Math.round(bareBefore.loadCpuPercent)}%`);
  for (const store of stores) {
    for (const count of licenseCounts[store]) {
      say(`${store}, ${count.toLocaleString('en-US')} licenses`);
      await runStore(store, count);
    }
  }
  if (flags['webhook-deliveries']) {
    for (const store of stores) {
      say(`${store}: webhook deliveries to a loopback receiver`);
      const result = await withTarget(store, (target) => measureWebhookDeliveries(target, Number(flags['webhook-deliveries']), pin ? SERVER_CORE : undefined));
      deliveryRows.push({ store, ...result });
      say(`  ${result.deliveries} deliveries in ${result.seconds.toFixed(2)} s: ${Math.round(result.perSecond)}/s, ${Math.round(result.cpuPerDeliveryUs)} µs CPU per delivery`);
    }
  }
  say('bare Fastify endpoint (again, to see drift)');
  const bareAfter = await runBare();
  say(`  ${Math.round(bareAfter.rps)} req/s, server CPU ${Math.round(bareAfter.cpuPercent)}% (${Math.round(bareAfter.cpuPerRequestUs)} µs/req), load CPU ${Math.round(bareAfter.loadCpuPercent)}%`);
  const bare = (bareBefore.rps + bareAfter.rps) / 2;
  // In this process, with no load running: the ES256 limit the token scenarios are held to.
  say('ES256 signing on one core (raw node:crypto, the server signer, jose)');
  const signing = await measureSigning(quick ? 1000 : 3000);
  rows.unshift(
    { store: 'bare', licenses: null, scenario: 'fixed JSON (before)', ...bareBefore },
    { store: 'bare', licenses: null, scenario: 'fixed JSON (after)', ...bareAfter },
  );

  console.log(`\nRatios are to the mean of the two bare runs: ${fmt(bare)} req/s.\n`);
  console.log(report(bare));
  console.log('\nServer peak resident memory (VmHWM):');
  for (const p of peaks) console.log(`- ${p.label}: ${fmt(p.hwmMiB)} MiB`);
  console.log('\nTargets (issue 2):');
  for (const line of targets(bare)) console.log(line);
  console.log('\nTargets (issue 3):');
  for (const line of tokenTargets(rows, bare, signing)) console.log(line);
  const purchases = rows.filter((r) => r.scenario === 'stripe purchase');
  if (purchases.length > 0) {
    console.log('\nTargets (issue 9):');
    for (const r of purchases) {
      const paced = rows.find((p) => p.store === r.store && p.licenses === r.licenses && p.scenario.startsWith('stripe purchase @'));
      const at = paced ? `; at 300/s offered: ${fmt(paced.rps)}/s answered, p99 ${paced.p99} ms, ${paced.failed} failed` : '';
      const met = r.rps >= 300 && paced !== undefined && paced.p99 < 100 && paced.failed === 0;
      const target = r.store === 'sqlite' ? ` (target >= 300/s with p99 < 100 ms): ${met ? 'met' : 'NOT met'}` : ' (reported beside SQLite)';
      console.log(`- Stripe purchase events, ${r.store}, ${fmt(r.licenses ?? 0)} licenses: ${fmt(r.rps)} events/s at saturation (${load.connections} connections, p99 ${r.p99} ms)${at}${target}`);
    }
  }
  if (deliveryRows.length > 0) {
    console.log('\nTargets (issue 11):');
    for (const r of deliveryRows) {
      console.log(`- Webhook deliveries, ${r.store}: ${fmt(r.perSecond)}/s (${fmt(r.cpuPerDeliveryUs)} µs CPU each; target 500/s): ${r.perSecond >= 500 ? 'met' : 'NOT met'}`);
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

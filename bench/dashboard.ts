/**
 * `npm run bench:dashboard`: the dashboard's license list with 1,000,000 licenses in one account.
 *
 * Seeds one account with a mix like a real shop's (an e-mail per customer, creation spread over
 * two years, 10% timed and expired, 5% revoked, a device on every third license), starts the
 * server as a child process exactly as `npm start` runs it (after its build), signs in through the log-in form,
 * then times the list, a search by e-mail and by key prefix, each status filter and the second
 * page, and streams the CSV export of all licenses while reading the server's peak resident
 * memory (VmHWM). Per request: the median and p95 of the wall time over localhost (an upper
 * bound of server time) and the server's CPU time per request (/proc/<pid>/stat).
 *
 *   npm run bench:dashboard -- --licenses 1000000 --stores sqlite,postgres
 *
 * Seeding a million takes minutes: --seed-sqlite-dir DIR / --seed-postgres-db NAME seed once and stop,
 * --sqlite-dir DIR / --postgres-db NAME measure what they seeded (the bulk action changes it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { cliPrincipal } from '../src/core/principal.ts';
import { normalizeEmail } from '../src/core/email.ts';
import { createServices } from '../src/services.ts';
import { openStore } from '../src/storage/index.ts';
import { flag } from '../src/storage/schema.ts';
import { startChild } from './child.ts';
import { bulkInsert, licenseKeys } from './seed.ts';
import type { SearchIndexer } from '../src/storage/sqlite-search-index.ts';

const { values: flags } = parseArgs({
  options: {
    licenses: { type: 'string', default: '1000000' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    repeat: { type: 'string', default: '30' },
    /** A SQLite DATA_DIR seeded by an earlier run (kept, not seeded again): seeding a million takes minutes. */
    'sqlite-dir': { type: 'string' },
    /** Seeds a new SQLite DATA_DIR at this path for later runs' --sqlite-dir, and stops. */
    'seed-sqlite-dir': { type: 'string' },
    /** A PostgreSQL database (on --database-url's server) seeded by an earlier run: kept, not seeded again. */
    'postgres-db': { type: 'string' },
    /** Seeds a new PostgreSQL database of this name for later runs' --postgres-db, and stops. */
    'seed-postgres-db': { type: 'string' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const COUNT = Number(flags.licenses);
const REPEAT = Number(flags.repeat);
const DAY = 86_400_000;
const PASSWORD = 'benchmark password';
const ENV = { RATE_LIMIT: 'off', LOG_LEVEL: 'warn', SECRET_KEY: '7e'.repeat(32) };

/** `npm start`'s node arguments (package.json), after its build step: the server as operators run it. */
function startArgs(): string[] {
  const [node, ...args] = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts.start!.trim().split(/\s+/);
  if (node !== 'node') throw new Error('npm start must run node directly to be benchmarked');
  if (spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' }).status !== 0) throw new Error('build failed');
  return args;
}

async function seedShop(target: { databaseUrl?: string; dataDir: string }): Promise<{ email: string; keys: string[] }> {
  const store = await openStore({ databaseUrl: target.databaseUrl, dataDir: target.dataDir });
  try {
    const services = createServices(store, loadConfig({ ...process.env, ...ENV, DATA_DIR: target.dataDir }).secretKey);
    const account = await services.accounts.create({ email: 'bench@example.com', password: PASSWORD });
    const products: { id: string }[] = [];
    for (const name of ['Aurora Photo', 'Nimbus Sync', 'Comet Notes']) products.push(await services.products.create(cliPrincipal(account.id), { name }));
    const keys = licenseKeys(COUNT);
    const now = Date.now();
    const licenses = bulkInsert(store, 'licenses', ['key', 'account_id', 'product_id', 'type', 'expires_at', 'revoked', 'email', 'email_normalized', 'max_devices', 'created_at']);
    const devices = bulkInsert(store, 'devices', ['license_key', 'identifier', 'name', 'activation_date']);
    const CHUNK = 1000;
    for (let start = 0; start < COUNT; start += CHUNK) {
      await store.write(async (tx) => {
        const l: unknown[] = [];
        const d: unknown[] = [];
        for (let i = start; i < Math.min(COUNT, start + CHUNK); i++) {
          // Keys are sorted; creation times are not (a hash of i spreads them over two years).
          const created = now - (((i * 2654435761) >>> 0) % (730 * DAY));
          const expired = i % 10 === 3;
          const email = `customer${i % (COUNT / 2)}@example.com`;
          l.push(keys[i], account.id, products[i % 3]!.id, expired ? 'timed' : 'perpetual', expired ? now - (i % 300) * DAY - DAY : null, flag(i % 20 === 7), email, normalizeEmail(email), 3, created);
          if (i % 3 === 0) d.push(keys[i], `device-${i}`, 'Laptop', created);
        }
        await tx.run(licenses(l));
        if (d.length) await tx.run(devices(d));
      });
    }
    // SQLite's search index follows writes in batches (sqlite-search-index.ts): index the seed before
    // measuring, as a server does within a minute of a bulk import.
    await (store as { searchIndex?: SearchIndexer }).searchIndex?.catchUp();
    return { email: 'customer7@example.com', keys };
  } finally {
    await store.close();
  }
}

/** The keys of a DATA_DIR seeded by an earlier run. */
async function seeded(target: { databaseUrl?: string; dataDir: string }): Promise<{ email: string; keys: string[] }> {
  const store = await openStore(target);
  try {
    const rows = await store.read.all(store.db.selectFrom('licenses').select('key').orderBy('key'));
    return { email: 'customer7@example.com', keys: rows.map((r) => r.key) };
  } finally {
    await store.close();
  }
}

function stats(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: sorted[Math.floor(sorted.length / 2)]!, p95: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]! };
}

async function run(kind: 'sqlite' | 'postgres'): Promise<void> {
  const reuse = kind === 'sqlite' ? flags['sqlite-dir'] : flags['postgres-db'];
  const dataDir = (kind === 'sqlite' ? reuse : undefined) ?? mkdtempSync(join(tmpdir(), 'tessera-bench-dash-'));
  const dbName = reuse ?? `tessera_bench_dash_${process.pid}`;
  const databaseUrl = kind === 'postgres' ? (reuse ? databaseOf(dbName) : await createDatabase(dbName)) : undefined;
  try {
    const t0 = Date.now();
    const { email, keys } = reuse ? await seeded({ databaseUrl, dataDir }) : await seedShop({ databaseUrl, dataDir });
    if (databaseUrl) {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      await c.query('ANALYZE');
      await c.end();
    }
    console.log(`\n## ${kind}: ${keys.length.toLocaleString('en-US')} licenses in one account (${reuse ? 'seeded earlier' : `seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s`})\n`);
    const env: Record<string, string> = { ...ENV, DATA_DIR: dataDir, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    const child = await startChild({ args: START, env, readyPath: '/readyz' });
    try {
      // Sign in through the form, as a browser does.
      const cookies = new Map<string, string>();
      const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
      const keep = (res: Response) => {
        for (const c of res.headers.getSetCookie()) {
          const [pair] = c.split(';');
          const [k, v] = pair!.split('=');
          cookies.set(k!, v!);
        }
      };
      const login = await fetch(`${child.baseUrl}/dashboard/login`);
      keep(login);
      const csrf = /name="csrf" value="([^"]+)"/.exec(await login.text())![1]!;
      const signed = await fetch(`${child.baseUrl}/dashboard/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: jar(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: 'bench@example.com', password: PASSWORD, csrf }),
      });
      keep(signed);
      if (signed.status !== 303) throw new Error(`log-in failed: ${signed.status}`);

      const first = await fetch(`${child.baseUrl}/dashboard/licenses`, { headers: { cookie: jar() } });
      const next = /href="(\/dashboard\/licenses\?cursor=[^"]+)"/.exec(await first.text())![1]!.replace(/&amp;/g, '&');
      const second = await (await fetch(`${child.baseUrl}${next}`, { headers: { cookie: jar() } })).text();
      const previous = /href="(\/dashboard\/licenses\?before=[^"]+)"/.exec(second)![1]!.replace(/&amp;/g, '&');
      const middle = keys[Math.floor(keys.length / 2)]!;
      const deviceIndex = Math.floor(COUNT / 3 / 3) * 3;
      // The overview's first view starts the count of every license and device (in slices, in the
      // background: the page waits at most 50 ms for it); the views timed below show that count.
      const firstView = performance.now();
      const overviewCpu = child.cpuSeconds();
      const firstOverview = await (await fetch(`${child.baseUrl}/dashboard`, { headers: { cookie: jar() } })).text();
      console.log(`Overview, first view: ${(performance.now() - firstView).toFixed(1)} ms wall (${firstOverview.includes('Counting…') ? 'counting in the background' : 'counted'})`);
      const countStarted = performance.now();
      while (!(await (await fetch(`${child.baseUrl}/dashboard`, { headers: { cookie: jar() } })).text()).includes('Active devices')) await new Promise((r) => setTimeout(r, 100));
      console.log(`Overview count of every license and device: done within ${((performance.now() - countStarted) / 1000).toFixed(1)} s, ${(child.cpuSeconds() - overviewCpu).toFixed(1)} s of server CPU\n`);
      const cases: [string, string][] = [
        ['overview (counts kept a minute)', '/dashboard'],
        ['audit log, first page', '/dashboard/audit'],
        ['list, first page', '/dashboard/licenses'],
        ['list, second page (keyset)', next],
        ['search by e-mail', `/dashboard/licenses?q=${encodeURIComponent(email)}`],
        ['search by key prefix', `/dashboard/licenses?q=${keys[Math.floor(keys.length / 3)]!.slice(0, 7)}`],
        ['list, previous page (keyset)', previous],
        ['search, order oldest first', '/dashboard/licenses?sort=oldest'],
        ['search by a piece of an address', `/dashboard/licenses?q=${encodeURIComponent(email.slice(2, -8))}`],
        ['search by a piece of a key (middle)', `/dashboard/licenses?q=${middle.slice(8, 17)}`],
        ['search by device identifier', `/dashboard/licenses?q=device-${deviceIndex}`],
        ['search by a domain every license has (worst case)', `/dashboard/licenses?q=${encodeURIComponent('@example.com')}`],
        // Pieces between sparse and dense: too few matches in the first window for a page, too many to read through the index cheaply.
        ['search by a piece of many addresses ("ustomer12": 2% at 1,000,000)', '/dashboard/licenses?q=ustomer12'],
        ['search by a device name on every third license', `/dashboard/licenses?q=laptop`],
        ['search by the common domain, revoked only', `/dashboard/licenses?q=${encodeURIComponent('@example.com')}&status=revoked`],
        ['status active', '/dashboard/licenses?status=active'],
        ['status expired', '/dashboard/licenses?status=expired'],
        ['status revoked', '/dashboard/licenses?status=revoked'],
      ];
      console.log('| request | rows | wall p50 (ms) | wall p95 (ms) | server CPU per request (ms) |');
      console.log('|---|---:|---:|---:|---:|');
      for (const [name, path] of cases) {
        const times: number[] = [];
        let rows = 0;
        const cpu0 = child.cpuSeconds();
        for (let i = 0; i < REPEAT; i++) {
          const started = performance.now();
          const res = await fetch(`${child.baseUrl}${path}`, { headers: { cookie: jar() } });
          const body = await res.text();
          times.push(performance.now() - started);
          if (res.status !== 200) throw new Error(`${name}: ${res.status}`);
          rows = (body.match(/class="key-text"/g) ?? []).length; // one per license row (the rows begin with a bulk checkbox)
        }
        const cpuMs = ((child.cpuSeconds() - cpu0) * 1000) / REPEAT;
        const s = stats(times);
        console.log(`| ${name} | ${rows} | ${s.p50.toFixed(1)} | ${s.p95.toFixed(1)} | ${cpuMs.toFixed(1)} |`);
      }

      // The CSV of every license, streamed: bytes as they come, the server's peak memory.
      const before = child.memory();
      const cpuBefore = child.cpuSeconds();
      const started = performance.now();
      const res = await fetch(`${child.baseUrl}/dashboard/licenses/export.csv`, { headers: { cookie: jar() } });
      let bytes = 0;
      let lines = 0;
      let firstByteMs = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        if (bytes === 0) firstByteMs = performance.now() - started;
        bytes += chunk.length;
        for (const b of chunk) if (b === 10) lines++;
      }
      const seconds = (performance.now() - started) / 1000;
      const after = child.memory();
      console.log(
        `\nCSV export of all licenses: ${lines - 1} rows, ${(bytes / 1048576).toFixed(0)} MiB in ${seconds.toFixed(1)} s wall, ${(child.cpuSeconds() - cpuBefore).toFixed(1)} s server CPU (first byte after ${firstByteMs.toFixed(0)} ms); server RSS ${before.rssMiB.toFixed(0)} MiB before, peak (VmHWM) ${after.hwmMiB.toFixed(0)} MiB`,
      );

      // The largest bulk action (1,000 timed licenses, as seeded, each its own unit with its audit entry and event), posted as the confirmation does.
      const form = await (await fetch(`${child.baseUrl}/dashboard/licenses`, { headers: { cookie: jar() } })).text();
      const formCsrf = /name="csrf" value="([^"]+)"/.exec(form)![1]!;
      const bulkCpu = child.cpuSeconds();
      const bulkStarted = performance.now();
      const bulk = await fetch(`${child.baseUrl}/dashboard/licenses/bulk`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: jar(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: formCsrf, action: 'extend', days: '1', scope: 'selected', keys: keys.filter((_, i) => i % 10 === 3).slice(0, 1000).join(' '), confirm: 'yes' }),
      });
      const outcome = new URL(bulk.headers.get('location') ?? '/', child.baseUrl).searchParams;
      if (bulk.status !== 303 || outcome.get('changed') === null) throw new Error(`bulk extend: ${bulk.status}`);
      console.log(
        `Bulk extend of 1,000 licenses: ${((performance.now() - bulkStarted) / 1000).toFixed(2)} s wall, ${(child.cpuSeconds() - bulkCpu).toFixed(2)} s server CPU (${outcome.get('changed')} changed, ${outcome.get('skipped') ?? 'none'} skipped)`,
      );
    } finally {
      await child.stop();
    }
  } finally {
    if (!reuse || kind === 'postgres') rmSync(dataDir, { recursive: true, force: true });
    if (kind === 'postgres' && !reuse) {
      const admin = new pg.Client({ connectionString: flags['database-url'] });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
  }
}

/** The URL of database `name` on --database-url's server. */
function databaseOf(name: string): string {
  const url = new URL(flags['database-url']!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function createDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: flags['database-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return databaseOf(name);
}

if (flags['seed-postgres-db']) {
  const t0 = Date.now();
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-dash-'));
  await seedShop({ databaseUrl: await createDatabase(flags['seed-postgres-db']), dataDir });
  rmSync(dataDir, { recursive: true, force: true });
  console.log(`seeded ${COUNT.toLocaleString('en-US')} licenses into database ${flags['seed-postgres-db']} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}

if (flags['seed-sqlite-dir']) {
  const t0 = Date.now();
  await seedShop({ dataDir: flags['seed-sqlite-dir'] });
  console.log(`seeded ${COUNT.toLocaleString('en-US')} licenses into ${flags['seed-sqlite-dir']} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}
const START = startArgs();
for (const kind of flags.stores!.split(',') as ('sqlite' | 'postgres')[]) await run(kind);

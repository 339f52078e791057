import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { type Child, cpuSeconds } from './child.ts';

export interface LoadOptions {
  /** Requests per second offered in total (open loop, paced); unset: as fast as the connections go. */
  rate?: number;
  connections: number;
  /** Seconds of measured load, after `warmup` seconds of unmeasured load (JIT, caches). */
  duration: number;
  warmup: number;
  /**
   * Every request must differ from the others (a new device, a new purchase): wrk then gets more
   * requests than the run can send, sized from the warm-up's rate; else it replays 50,000.
   */
  distinct?: boolean;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  /** Answers that were not 2xx, plus socket errors and timeouts. */
  failed: number;
  /** Highest VmRSS sampled during the measured load, MiB (summed over the servers). */
  rssMiB: number;
  /** Highest anonymous (RssAnon) and file-backed (RssFile) resident memory sampled, MiB. */
  anonMiB: number;
  fileMiB: number;
  /** Share of one core the server used during the measured load: near 100 means server-bound. */
  cpuPercent: number;
  /** Server CPU time per answered request, µs: the figure least disturbed by other load on the machine. */
  cpuPerRequestUs: number;
  /** The same for the load generator (this process and its wrk): near 100 means the generator was the limit. */
  loadCpuPercent: number;
}

/** What one load run against one server gave. */
interface Run {
  total: number;
  rps: number;
  p50: number;
  p99: number;
  failed: number;
}

async function cannon(baseUrl: string, request: autocannon.Request, connections: number, duration: number): Promise<Run> {
  const r = await autocannon({ url: baseUrl, connections, duration, requests: [request] });
  return { total: r.requests.total, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failed: r.non2xx + r.errors + r.timeouts };
}

/**
 * The saturating generator: wrk (Debian's package) where it is installed, one thread on this
 * process's core. autocannon tops out near the service's own speed on one core (it is JavaScript
 * on the same runtime), so its figures were partly the generator's; wrk, in C, has room to spare
 * (its load CPU is printed beside every row). Without wrk, autocannon, and the bench says so.
 */
export const GENERATOR: 'wrk' | 'autocannon' = spawnSync('wrk', ['--version']).error ? 'autocannon' : 'wrk';

/**
 * wrk replays requests made beforehand by the scenario's own builder (Lua cannot call it): `count`
 * of them, in order, over and over. A scenario whose every request must differ (an activation of a
 * new device) gets more than one run can send (see `measure`).
 */
const WRK_SCRIPT = `
local requests, n, i = {}, 0, 0
local file = assert(io.open(os.getenv("WRK_REQUESTS"), "rb"))
local data = file:read("*a")
file:close()
local at = 1
while at <= #data do
  local size, start = data:match("^(%d+)\\n()", at)
  n = n + 1
  requests[n] = data:sub(start, start + tonumber(size) - 1)
  at = start + tonumber(size)
end
request = function()
  i = i % n + 1
  return requests[i]
end
done = function(summary, latency, _)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"micros":%d,"failed":%d,"p50":%.3f,"p99":%.3f}\\n', summary.requests, summary.duration,
    e.status + e.connect + e.read + e.write + e.timeout, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
`;

function rawRequest(baseUrl: string, request: autocannon.Request): string {
  const built = typeof request.setupRequest === 'function' ? request.setupRequest({ ...request }, {}) : request;
  const body = (built.body as string | undefined) ?? '';
  const headers: Record<string, string> = { host: new URL(baseUrl).host, ...(built.headers as Record<string, string> | undefined) };
  if (body) headers['content-length'] = String(Buffer.byteLength(body));
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return `${built.method ?? 'GET'} ${built.path ?? '/'} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** Writes `count` requests and wrk's script; the returned run starts wrk and cleans up after it. */
function prepareWrk(baseUrl: string, request: autocannon.Request, connections: number, duration: number, count: number): () => Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-wrk-'));
  const file = join(dir, 'requests');
  const chunks: string[] = [];
  for (let i = 0; i < count; i++) {
    const raw = rawRequest(baseUrl, request);
    chunks.push(`${Buffer.byteLength(raw)}\n${raw}`);
  }
  writeFileSync(file, chunks.join(''));
  writeFileSync(join(dir, 'script.lua'), WRK_SCRIPT);
  return async () => {
    try {
      const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${duration}s`, '--timeout', '10s', '-s', join(dir, 'script.lua'), baseUrl], {
        env: { ...process.env, WRK_REQUESTS: file },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      const line = out.split('\n').find((l) => l.startsWith('{"requests"'));
      if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${out}`);
      const r = JSON.parse(line) as { requests: number; micros: number; failed: number; p50: number; p99: number };
      return { total: r.requests, rps: r.requests / (r.micros / 1e6), p50: r.p50, p99: r.p99, failed: r.failed };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

/**
 * Open loop at an even pace: request i is sent at start + i/rate s whatever came back before, over
 * up to `connections` keep-alive sockets, and its latency counts from that scheduled time (a request
 * that waited for a free socket is charged the wait). autocannon's `overallRate` is not used for
 * this: it gives each connection a budget per second, so every connection sends its share at the
 * start of each second and the server sees the second's requests as one burst.
 */
function paced(baseUrl: string, request: autocannon.Request, connections: number, duration: number, rate: number): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const url = new URL(baseUrl);
  const latencies: number[] = [];
  let failed = 0;
  let sent = 0;
  const count = Math.round(rate * duration);
  const start = performance.now();
  return new Promise((resolve) => {
    let pending = 0;
    const finish = () => {
      agent.destroy();
      latencies.sort((a, b) => a - b);
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
      resolve({ total: latencies.length, rps: latencies.length / ((performance.now() - start) / 1000), p50: Math.round(at(0.5)), p99: Math.round(at(0.99)), failed });
    };
    const send = (scheduled: number) => {
      const built = typeof request.setupRequest === 'function' ? request.setupRequest({ ...request }, {}) : request;
      pending++;
      const done = (ok: boolean) => {
        if (ok) latencies.push(performance.now() - scheduled);
        else failed++;
        if (--pending === 0 && sent === count) finish();
      };
      const req = httpRequest(
        { agent, host: url.hostname, port: url.port, method: built.method ?? 'GET', path: built.path ?? '/', headers: built.headers as Record<string, string> },
        (res) => {
          res.resume();
          res.on('end', () => done((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300));
        },
      );
      req.on('error', () => done(false));
      req.end(built.body as string | undefined);
    };
    const tick = () => {
      const due = Math.min(count, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
      while (sent < due) send(start + (sent++ * 1000) / rate);
      if (sent < count) setTimeout(tick, 1);
      else if (pending === 0) finish();
    };
    tick();
  });
}

/** Requests wrk replays; for distinct ones, a first guess of the rate (before the warm-up tells). */
const REPLAYED = 50_000;
const DISTINCT_GUESS_PER_SECOND = 30_000;

/**
 * Readies `connections` connections (and the offered `rate`) against the servers, split evenly;
 * the returned function runs them all at once (what it costs to make wrk's requests is paid before).
 */
function prepareAll(children: Child[], request: autocannon.Request, connections: number, duration: number, rate?: number, distinctPerSecond?: number): () => Promise<Run[]> {
  const each = Math.max(1, Math.round(connections / children.length));
  const eachRate = rate ? Math.max(1, Math.round(rate / children.length)) : undefined;
  const count = distinctPerSecond ? Math.ceil(((distinctPerSecond * 1.5) / children.length) * duration) + 1000 : REPLAYED;
  const runs = children.map((child): (() => Promise<Run>) =>
    eachRate
      ? () => paced(child.baseUrl, request, each, duration, eachRate)
      : GENERATOR === 'wrk'
        ? prepareWrk(child.baseUrl, request, each, duration, count)
        : () => cannon(child.baseUrl, request, each, duration),
  );
  return () => Promise.all(runs.map((run) => run()));
}

/**
 * One warm-up then one measured run (wrk, or autocannon: GENERATOR), sampling the servers' memory meanwhile. With
 * several servers (processes sharing one PostgreSQL) the connections are split between them:
 * req/s and server CPU are summed, p50 is the mean and p99 the worst of theirs.
 */
export async function measure(target: Child | Child[], request: autocannon.Request, o: LoadOptions): Promise<LoadResult> {
  const children = Array.isArray(target) ? target : [target];
  let perSecond = o.distinct ? DISTINCT_GUESS_PER_SECOND : undefined;
  if (o.warmup > 0) {
    const warm = await prepareAll(children, request, o.connections, o.warmup, o.rate, perSecond)();
    if (perSecond) perSecond = Math.max(1000, warm.reduce((n, r) => n + r.rps, 0));
  }
  const peak = { rssMiB: 0, anonMiB: 0, fileMiB: 0 };
  const sampleMemory = () => {
    const now = children.map((c) => c.memory());
    const sum = (f: (m: (typeof now)[number]) => number) => now.reduce((total, m) => total + f(m), 0);
    peak.rssMiB = Math.max(peak.rssMiB, sum((m) => m.rssMiB));
    peak.anonMiB = Math.max(peak.anonMiB, sum((m) => m.anonMiB));
    peak.fileMiB = Math.max(peak.fileMiB, sum((m) => m.fileMiB));
  };
  sampleMemory();
  const sampler = setInterval(sampleMemory, 250);
  const serverCpu = () => children.reduce((total, c) => total + c.cpuSeconds(), 0);
  const run = prepareAll(children, request, o.connections, o.duration, o.rate, perSecond);
  const cpuBefore = serverCpu();
  const ownBefore = cpuSeconds(process.pid, true);
  const started = performance.now();
  try {
    const results = await run();
    const seconds = (performance.now() - started) / 1000;
    const cpu = serverCpu() - cpuBefore;
    const total = results.reduce((n, r) => n + r.total, 0);
    const own = cpuSeconds(process.pid, true) - ownBefore;
    return {
      rps: results.reduce((n, r) => n + r.rps, 0),
      p50: results.reduce((n, r) => n + r.p50, 0) / results.length,
      p99: Math.max(...results.map((r) => r.p99)),
      failed: results.reduce((n, r) => n + r.failed, 0),
      ...peak,
      cpuPercent: (100 * cpu) / seconds,
      cpuPerRequestUs: (cpu * 1e6) / Math.max(1, total),
      loadCpuPercent: (100 * own) / seconds,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** Sends the request the builder makes once, for a scenario's sanity check. */
export async function sample(baseUrl: string, request: autocannon.Request): Promise<{ status: number; body: unknown }> {
  const built = request.setupRequest && typeof request.setupRequest === 'function' ? request.setupRequest({ ...request }, {}) : request;
  const res = await fetch(baseUrl + (built.path ?? '/'), {
    method: built.method ?? 'GET',
    headers: built.headers as Record<string, string> | undefined,
    body: built.body as string | undefined,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, body };
}

import { Agent, request as httpRequest } from 'node:http';
import autocannon from 'autocannon';
import type { Child } from './child.ts';

export interface LoadOptions {
  /** Requests per second offered in total (open loop, paced); unset: as fast as the connections go. */
  rate?: number;
  connections: number;
  /** Seconds of measured load, after `warmup` seconds of unmeasured load (JIT, caches). */
  duration: number;
  warmup: number;
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
  /** The same for the load generator (this process): near 100 means the generator was the limit. */
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

/** Runs `o.connections` connections (and the offered `rate`) against the servers, split evenly, at once. */
async function cannonAll(children: Child[], request: autocannon.Request, connections: number, duration: number, rate?: number): Promise<Run[]> {
  const each = Math.max(1, Math.round(connections / children.length));
  const eachRate = rate ? Math.max(1, Math.round(rate / children.length)) : undefined;
  return Promise.all(children.map((child) => (eachRate ? paced(child.baseUrl, request, each, duration, eachRate) : cannon(child.baseUrl, request, each, duration))));
}

/**
 * One warm-up then one measured autocannon run, sampling the servers' memory meanwhile. With
 * several servers (processes sharing one PostgreSQL) the connections are split between them:
 * req/s and server CPU are summed, p50 is the mean and p99 the worst of theirs.
 */
export async function measure(target: Child | Child[], request: autocannon.Request, o: LoadOptions): Promise<LoadResult> {
  const children = Array.isArray(target) ? target : [target];
  if (o.warmup > 0) await cannonAll(children, request, o.connections, o.warmup, o.rate);
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
  const cpuBefore = serverCpu();
  const ownBefore = process.cpuUsage();
  const started = performance.now();
  try {
    const results = await cannonAll(children, request, o.connections, o.duration, o.rate);
    const seconds = (performance.now() - started) / 1000;
    const cpu = serverCpu() - cpuBefore;
    const total = results.reduce((n, r) => n + r.total, 0);
    const own = process.cpuUsage(ownBefore);
    return {
      rps: results.reduce((n, r) => n + r.rps, 0),
      p50: results.reduce((n, r) => n + r.p50, 0) / results.length,
      p99: Math.max(...results.map((r) => r.p99)),
      failed: results.reduce((n, r) => n + r.failed, 0),
      ...peak,
      cpuPercent: (100 * cpu) / seconds,
      cpuPerRequestUs: (cpu * 1e6) / Math.max(1, total),
      loadCpuPercent: (own.user + own.system) / 1e4 / seconds,
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

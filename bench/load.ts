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

function cannon(baseUrl: string, request: autocannon.Request, connections: number, duration: number, rate?: number): Promise<autocannon.Result> {
  return autocannon({ url: baseUrl, connections, duration, requests: [request], ...(rate ? { overallRate: rate } : {}) });
}

/** Runs `o.connections` connections (and the offered `rate`) against the servers, split evenly, at once. */
async function cannonAll(children: Child[], request: autocannon.Request, connections: number, duration: number, rate?: number): Promise<autocannon.Result[]> {
  const each = Math.max(1, Math.round(connections / children.length));
  const eachRate = rate ? Math.max(1, Math.round(rate / children.length)) : undefined;
  return Promise.all(children.map((child) => cannon(child.baseUrl, request, each, duration, eachRate)));
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
    const total = results.reduce((n, r) => n + r.requests.total, 0);
    const own = process.cpuUsage(ownBefore);
    return {
      rps: results.reduce((n, r) => n + r.requests.average, 0),
      p50: results.reduce((n, r) => n + r.latency.p50, 0) / results.length,
      p99: Math.max(...results.map((r) => r.latency.p99)),
      failed: results.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0),
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

import autocannon from 'autocannon';
import type { Child } from './child.ts';

export interface LoadOptions {
  connections: number;
  /** Seconds of measured load, after `warmup` seconds of unmeasured load (JIT, caches). */
  duration: number;
  warmup: number;
  /** Requests per second offered in total (open loop, paced); unset: as fast as the connections go. */
  rate?: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  /** Answers that were not 2xx, plus socket errors and timeouts. */
  failed: number;
  /** Highest VmRSS sampled during the measured load, MiB. */
  rssMiB: number;
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

/** One warm-up then one measured autocannon run, sampling the server's memory meanwhile. */
export async function measure(child: Child, request: autocannon.Request, o: LoadOptions): Promise<LoadResult> {
  if (o.warmup > 0) await cannon(child.baseUrl, request, o.connections, o.warmup, o.rate);
  let rssMiB = child.memory().rssMiB;
  const sampler = setInterval(() => {
    rssMiB = Math.max(rssMiB, child.memory().rssMiB);
  }, 250);
  const cpuBefore = child.cpuSeconds();
  const ownBefore = process.cpuUsage();
  const started = performance.now();
  try {
    const r = await cannon(child.baseUrl, request, o.connections, o.duration, o.rate);
    const seconds = (performance.now() - started) / 1000;
    const serverCpu = child.cpuSeconds() - cpuBefore;
    const cpuPercent = (100 * serverCpu) / seconds;
    const cpuPerRequestUs = (serverCpu * 1e6) / Math.max(1, r.requests.total);
    const own = process.cpuUsage(ownBefore);
    const loadCpuPercent = (own.user + own.system) / 1e4 / seconds;
    return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failed: r.non2xx + r.errors + r.timeouts, rssMiB, cpuPercent, cpuPerRequestUs, loadCpuPercent };
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

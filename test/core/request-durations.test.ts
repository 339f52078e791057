import { Histogram, type Metric, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurations } from '../../src/http/request-durations.ts';

describe('RequestDurations (the request histogram of /metrics)', () => {
  it("exports exactly what prom-client's histogram exports for the same observations", async () => {
    const ours = new Registry();
    const durations = new RequestDurations();
    ours.registerMetric(durations as unknown as Metric);
    const theirs = new Registry();
    const histogram = new Histogram({
      name: durations.name,
      help: durations.help,
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.025, 0.1, 0.5, 2.5],
      registers: [theirs],
    });
    const seen: [string, string, number, number][] = [
      ['POST', '/api/v1/public/licenses/validate', 200, 0.0004],
      ['POST', '/api/v1/public/licenses/validate', 200, 0.005], // on a bound: that bucket
      ['GET', '/api/v1/products/:productId', 404, 0.03],
      ['POST', '/api/v1/public/licenses/validate', 400, 3], // above every bound
      ['GET', 'unmatched', 404, 0.1],
      ['POST', '/api/v1/public/licenses/validate', 200, 0.7],
    ];
    for (const [method, route, status, seconds] of seen) {
      durations.observe(method, route, status, seconds);
      histogram.observe({ method, route, status: String(status) }, seconds);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});

/** Upper bounds (seconds) of the request-duration buckets: few, as each is a series per route and status. */
const BOUNDS = [0.005, 0.025, 0.1, 0.5, 2.5] as const;

interface Series {
  labels: { method: string; route: string; status: string };
  /** Observations per bucket (not cumulative); the last counts those above every bound. */
  buckets: number[];
  sum: number;
  count: number;
}

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
  /** As prom-client's buckets carry it (none here). */
  exemplar?: null;
}

/**
 * `tessera_http_request_duration_seconds`, a Prometheus histogram by method, route pattern and
 * status, counted with a few Map lookups and additions per request. prom-client's Histogram
 * hashes and validates the labels on every observation (about half a microsecond, most of what
 * the metrics cost a request). Registered in the prom-client registry, which formats it: `get()`
 * gives the samples in the form, order and labels of prom-client's own histogram.
 */
export class RequestDurations {
  readonly name = 'tessera_http_request_duration_seconds';
  readonly help = 'HTTP requests by method, route pattern and status, with their duration.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** route → method → status → series: the route and method strings are the same objects each request. */
  private routes = new Map<string, Map<string, Map<number, Series>>>();
  /** Series in the order they first appeared (the order prom-client exports them). */
  private order: Series[] = [];

  observe(method: string, route: string, status: number, seconds: number): void {
    let methods = this.routes.get(route);
    if (!methods) this.routes.set(route, (methods = new Map()));
    let statuses = methods.get(method);
    if (!statuses) methods.set(method, (statuses = new Map()));
    let series = statuses.get(status);
    if (!series) {
      series = { labels: { method, route, status: String(status) }, buckets: new Array<number>(BOUNDS.length + 1).fill(0), sum: 0, count: 0 };
      statuses.set(status, series);
      this.order.push(series);
    }
    let i = 0;
    while (i < BOUNDS.length && seconds > BOUNDS[i]!) i++;
    series.buckets[i]!++;
    series.sum += seconds;
    series.count++;
  }

  async get(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: string }> {
    const values: Sample[] = [];
    for (const { labels, buckets, sum, count } of this.order) {
      let below = 0;
      BOUNDS.forEach((le, i) => {
        below += buckets[i]!;
        values.push({ labels: { le, ...labels }, value: below, metricName: `${this.name}_bucket`, exemplar: null });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${this.name}_bucket`, exemplar: null });
      values.push({ labels: { ...labels }, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...labels }, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.routes = new Map();
    this.order = [];
  }
}

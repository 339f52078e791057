import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, type Metric, Registry, collectDefaultMetrics } from 'prom-client';
import type { ValidationCache } from '../modules/licenses/validation-cache.ts';
import { AppError } from '../core/errors.ts';
import type { Outbox } from '../modules/outbox/outbox.ts';
import type { AttemptOutcome } from '../modules/webhooks/delivery.ts';
import type { Store } from '../storage/index.ts';
import { toAppError } from './errors.ts';
import { RequestDurations } from './request-durations.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The error code a failed request answered with (activation outcomes). */
    errorCode: string | null;
  }
}

/** Activation routes (route patterns) and the API each belongs to. */
const ACTIVATION_ROUTES = new Map([
  ['/api/v1/public/licenses/activate', 'public'],
  ['/api/v1/licenses/activate', 'server'],
]);

/** A metric of our own in prom-client's registry (which takes any object with its `get` and `reset`). */
function withRegistry<M extends RequestDurations>(registry: Registry, metric: M): M {
  registry.registerMetric(metric as unknown as Metric);
  return metric;
}

/**
 * The service's Prometheus metrics, one registry per app: requests by route pattern and status
 * with durations, activation outcomes, the outbox backlog, the store's pool, rate-limit
 * fallbacks, and the process metrics prom-client collects.
 */
export class Metrics {
  readonly registry = new Registry();
  // Registered first, where prom-client's histogram was: the same order on the page.
  private readonly requests = withRegistry(this.registry, new RequestDurations());
  readonly activations = new Counter({
    name: 'tessera_activations_total',
    help: 'Device activations by API and outcome (activated, or the error code).',
    labelNames: ['api', 'outcome'],
    registers: [this.registry],
  });
  readonly rateLimitFallbacks = new Counter({
    name: 'tessera_rate_limit_fallback_total',
    help: 'Requests whose rate limit was counted in memory because Redis could not be reached.',
    registers: [this.registry],
  });

  constructor(sources: { store: Store; outbox: Outbox; webhooks: WebhookSource; validationCache?: ValidationCache }) {
    collectDefaultMetrics({ register: this.registry });
    webhookMetrics(this.registry, sources.webhooks);
    new Gauge({
      name: 'tessera_store_pool',
      help: 'Store pool: PostgreSQL connections (total, idle, waiting clients); SQLite units queued for the next write batch.',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        for (const [state, value] of Object.entries(sources.store.stats())) this.set({ state }, value);
      },
    });
    new Gauge({
      name: 'tessera_outbox_jobs',
      help: 'Outbox jobs not done, by kind and state (pending, dead).',
      labelNames: ['kind', 'status'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { kind, status, count } of await sources.outbox.backlog()) this.set({ kind, status }, count);
      },
    });
    const cache = sources.validationCache;
    if (cache) {
      new Gauge({
        name: 'tessera_validation_cache_entries',
        help: 'PostgreSQL: validation rows held in memory (VALIDATION_CACHE_ENTRIES at most).',
        registers: [this.registry],
        collect() {
          this.set(cache.stats().entries);
        },
      });
      const counted = { hit: 0, miss: 0 };
      new Counter({
        name: 'tessera_validation_cache_lookups_total',
        help: 'PostgreSQL: validations and token refreshes by whether their row came from memory (hit) or the database (miss).',
        labelNames: ['result'],
        registers: [this.registry],
        collect() {
          const { hits, misses } = cache.stats();
          this.inc({ result: 'hit' }, hits - counted.hit);
          this.inc({ result: 'miss' }, misses - counted.miss);
          counted.hit = hits;
          counted.miss = misses;
        },
      });
    }
    const statements = sources.store.statementCache?.bind(sources.store);
    if (statements) {
      new Gauge({
        name: 'tessera_sqlite_statements_cached',
        help: 'SQLite: prepared statements held in the cache.',
        registers: [this.registry],
        collect() {
          this.set(statements().cached);
        },
      });
      let counted = 0;
      new Counter({
        name: 'tessera_sqlite_statements_evicted_total',
        help: 'SQLite: prepared statements evicted from the full cache (a steady rise means more distinct SQL texts than it holds).',
        registers: [this.registry],
        collect() {
          const { evicted } = statements();
          this.inc(evicted - counted);
          counted = evicted;
        },
      });
    }
  }

  observe(req: FastifyRequest, reply: FastifyReply): void {
    const route = req.routeOptions.url;
    const status = reply.statusCode;
    this.requests.observe(req.method, route ?? 'unmatched', status, reply.elapsedTime / 1000);
    const api = route === undefined ? undefined : ACTIVATION_ROUTES.get(route);
    if (api) this.activations.inc({ api, outcome: status === 200 ? 'activated' : (req.errorCode ?? String(status)) });
  }
}

/** Where the webhook family reads from: this process's attempts by outcome, and the deliveries waiting in the store. */
export interface WebhookSource {
  outcomes: Readonly<Record<AttemptOutcome, number>>;
  backlog(): Promise<{ count: number; oldestCreatedAt: number | null }>;
  clock: () => number;
}

const ATTEMPT_OUTCOMES: readonly AttemptOutcome[] = ['succeeded', 'retrying', 'failed'];

/**
 * Operator webhooks: attempts by outcome (this process, since it started: a counter), and the
 * deliveries waiting to be sent with the age of the oldest (the whole store: what an alert on a
 * stuck receiver or a stalled worker looks at). One read of the store per scrape for both gauges.
 */
function webhookMetrics(registry: Registry, source: WebhookSource): void {
  const counted: Record<AttemptOutcome, number> = { succeeded: 0, retrying: 0, failed: 0 };
  new Counter({
    name: 'tessera_webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome: succeeded; retrying (failed, tried again later); failed (failed for good: the last attempt, or the endpoint disabled).',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const outcome of ATTEMPT_OUTCOMES) {
        this.inc({ outcome }, source.outcomes[outcome] - counted[outcome]);
        counted[outcome] = source.outcomes[outcome];
      }
    },
  });
  // Both gauges are collected at once (prom-client collects every metric of a scrape together):
  // they share one read of the store, started by whichever asks first.
  let reading: Promise<{ count: number; oldestCreatedAt: number | null }> | undefined;
  const backlog = () => (reading ??= source.backlog().finally(() => (reading = undefined)));
  new Gauge({
    name: 'tessera_webhook_backlog',
    help: 'Webhook deliveries waiting to be sent (a first attempt or a retry), all processes.',
    registers: [registry],
    async collect() {
      this.set((await backlog()).count);
    },
  });
  new Gauge({
    name: 'tessera_webhook_oldest_pending_seconds',
    help: 'Age of the oldest webhook delivery waiting to be sent, in seconds (0 when none waits).',
    registers: [registry],
    async collect() {
      const { oldestCreatedAt } = await backlog();
      this.set(oldestCreatedAt === null ? 0 : Math.max(0, (source.clock() - oldestCreatedAt) / 1000));
    },
  });
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Records every request and serves `GET /metrics` (behind `Authorization: Bearer METRICS_TOKEN` when set). */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, token: string | undefined): void {
  app.decorateRequest('errorCode', null);
  app.addHook('onError', (req, _reply, error, done) => {
    req.errorCode = toAppError(error).code;
    done();
  });
  app.addHook('onResponse', (req, reply, done) => {
    metrics.observe(req, reply);
    done();
  });

  const expected = token === undefined ? undefined : digest(token);
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (expected) {
      const header = req.headers.authorization;
      if (!header?.startsWith('Bearer ')) throw new AppError('missing_api_key', 'Send Authorization: Bearer <METRICS_TOKEN>.');
      // Digests of equal length: the comparison takes the same time whatever was sent.
      if (!timingSafeEqual(digest(header.slice(7)), expected)) throw new AppError('invalid_api_key', 'The metrics token is not valid.');
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}

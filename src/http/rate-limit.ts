import { createRequire } from 'node:module';
import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { SharedCounts } from './rate-limit-counts.ts';

/** The plugin's store contract (`incr` with a Node callback; `child` per route or limiter). */
interface CounterStore {
  incr(key: string, cb: (err: Error | null, res: { current: number; ttl: number } | null) => void, timeWindow: number, max: number): void;
  child(options: ChildOptions): CounterStore;
}
interface ChildOptions {
  continueExceeding: boolean;
  exponentialBackoff: boolean;
  routeInfo: { method?: string; url?: string };
}
type StoreClass = new (continueExceeding: boolean, exponentialBackoff: boolean, ...rest: unknown[]) => CounterStore;

// The plugin's own memory store, for when Redis is out of reach.
const require = createRequire(import.meta.url);
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as StoreClass;

export interface RateLimitBackendOptions {
  /** REDIS_URL: counters shared by every process; in memory when absent. */
  redisUrl?: string;
  /** Prefix of every counter's Redis key (several deployments or tests on one Redis). */
  keyPrefix: string;
  /** Called for each request counted in memory because Redis could not be reached. */
  onFallback?: () => void;
}

const MINUTE = 60_000;

/**
 * Redis with a way back: while the connection is not ready, or a command fails, the request is
 * counted in this process's memory instead (limits then hold per process), so an outage of
 * Redis never fails a request. Logged once when an outage begins and once when it ends.
 */
class RedisLink {
  private down = false;
  readonly counts: SharedCounts;
  /** Set when the app closes: the connection's end is not an outage. */
  closing = false;

  constructor(
    readonly redis: Redis,
    private readonly app: FastifyInstance,
    private readonly onFallback: () => void,
  ) {
    this.counts = new SharedCounts(redis);
    redis.on('ready', () => this.succeeded());
    redis.on('error', (error: Error) => this.failed(error));
    redis.on('close', () => this.failed(new Error('connection closed')));
  }

  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  /** Redis answered (a reconnection, or a command after one that failed). */
  succeeded(): void {
    if (!this.down) return;
    this.down = false;
    this.app.log.info('Redis is reachable again: rate limits are counted in Redis');
  }

  failed(error: Error): void {
    if (this.down || this.closing) return;
    this.down = true;
    this.app.log.warn({ err: error }, 'Redis is unreachable: rate limits fall back to memory (per process) until it is back');
  }

  fellBack(): void {
    this.onFallback();
  }
}

function fallbackStore(link: RedisLink, keyPrefix: string): new (params: ChildOptions) => CounterStore {
  class FallbackStore implements CounterStore {
    private readonly local: CounterStore;
    constructor(
      params: ChildOptions,
      private readonly prefix = keyPrefix,
    ) {
      // Counted in Redis by SharedCounts: a fixed window, which is all the limits here ask for.
      if (params.continueExceeding || params.exponentialBackoff) throw new Error('Rate limits in Redis: continueExceeding and exponentialBackoff are not supported');
      this.local = new LocalStore(params.continueExceeding, params.exponentialBackoff);
    }

    incr(key: string, cb: Parameters<CounterStore['incr']>[1], timeWindow: number, max: number): void {
      if (!link.ready) {
        link.fellBack();
        return this.local.incr(key, cb, timeWindow, max);
      }
      link.counts.incr(
        this.prefix + key,
        (err, res) => {
          if (!err) {
            link.succeeded();
            return cb(null, res);
          }
          link.failed(err);
          link.fellBack();
          this.local.incr(key, cb, timeWindow, max);
        },
        timeWindow,
        max,
      );
    }

    /** A route's limit gets its own keys; a limiter made with `app.rateLimit()` has no route and names its keys itself. */
    child(options: ChildOptions): CounterStore {
      const { method, url } = options.routeInfo;
      return new FallbackStore(options, url ? `${keyPrefix}${method}${url}-` : keyPrefix);
    }
  }
  return FallbackStore;
}

/** Resolves when the client is ready, or after `ms` (it keeps reconnecting in the background). */
function connected(redis: Redis, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
  });
}

/**
 * The one place that chooses where rate limits are counted, for every limit registered through
 * the plugin: per-route `config.rateLimit` (portal, dashboard) and `app.rateLimit()` limiters
 * (public API, server API). Answers carry the draft-spec `RateLimit-Limit`, `-Remaining` and
 * `-Reset` headers, and 429s `Retry-After`.
 */
export async function registerRateLimits(app: FastifyInstance, options: RateLimitBackendOptions): Promise<void> {
  let store: (new (params: ChildOptions) => CounterStore) | undefined;
  if (options.redisUrl) {
    // Loaded only where Redis is configured (start-up time and memory: docs/decisions/lazy-modules.md).
    const { Redis } = await import('ioredis');
    const redis = new Redis(options.redisUrl, {
      // Fail fast while disconnected (the request is counted in memory) instead of queueing.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 250,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    });
    const link = new RedisLink(redis, app, options.onFallback ?? (() => {}));
    // Start counting in Redis from the first request when it answers; never refuse to start without it.
    await connected(redis, 2000);
    store = fallbackStore(link, options.keyPrefix);
    app.addHook('onClose', async () => {
      link.closing = true;
      link.counts.close();
      redis.disconnect();
    });
  }
  await app.register(rateLimit, {
    global: false,
    enableDraftSpec: true,
    timeWindow: MINUTE,
    // The plugin's declared store type omits the options it passes (continueExceeding, routeInfo).
    ...(store ? { store: store as unknown as FastifyRateLimitStoreCtor } : {}),
    errorResponseBuilder: (_req, context) => ({ statusCode: 429, message: `Rate limit exceeded; retry in ${context.after}.` }),
  });
}

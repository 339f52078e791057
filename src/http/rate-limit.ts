import { createRequire } from 'node:module';
import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';

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

// The plugin's own stores (its Redis store's Lua script: INCR + PEXPIRE in one round trip).
const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as StoreClass;
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
  readonly pipeline: TurnPipeline;
  /** Set when the app closes: the connection's end is not an outage. */
  closing = false;

  constructor(
    readonly redis: Redis,
    private readonly app: FastifyInstance,
    private readonly onFallback: () => void,
  ) {
    this.pipeline = new TurnPipeline(redis as TurnClient);
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

type Reply = (err: Error | null, result: unknown) => void;

/**
 * The plugin's own Lua script (its Redis store defines it on the client it is given), and one
 * that runs it for several keys in one call: the counting is the plugin's, only the round trip is
 * shared. The keys come grouped by their arguments (a route's window, maximum and flags, the same
 * for all its requests), each group's arguments sent once: ARGV = n1, window, max, continue,
 * backoff, n2, ... for the first n1 keys, the next n2, and so on. The answer is one string of
 * `current ttl` pairs, which costs the client one decode where an array of pairs costs four per key.
 */
function turnScript(): string {
  const defined: Record<string, string> = {};
  new RedisStore(false, false, { defineCommand: (name: string, options: { lua: string }) => (defined[name] = options.lua) });
  const one = defined.rateLimit;
  if (!one) throw new Error('@fastify/rate-limit: its Redis store no longer defines the rateLimit script');
  return [
    'local function rateLimit(KEYS, ARGV)',
    one,
    'end',
    'local out, k, a = {}, 1, 1',
    'while a < #ARGV do',
    '  local args = {ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]}',
    '  for _ = 1, tonumber(ARGV[a]) do',
    '    local r = rateLimit({KEYS[k]}, args)',
    // %d: integers as Redis would have answered them (a long backoff window is a float in Lua).
    "    out[#out + 1] = string.format('%d %d', r[1], r[2])",
    '    k = k + 1',
    '  end',
    '  a = a + 5',
    'end',
    'return table.concat(out, " ")',
  ].join('\n');
}

type TurnClient = Redis & { rateLimitTurn(count: number, ...rest: unknown[]): void; rateLimitRead(...args: unknown[]): void };

/** The keys of one turn that share their arguments, and their requests' callbacks, in order. */
interface Group {
  args: [number, number, boolean, boolean];
  keys: string[];
  replies: Reply[];
}

/**
 * What the plugin's Redis store calls: the `rateLimit` calls of one event-loop turn go out as one
 * script call carrying every key of the turn (one command, one write, one reply, one timeout timer
 * for all the requests of the turn, where ioredis would build, time and parse a command per
 * request). A Redis command's own cost is most of a limit's cost, so under load this divides it.
 */
class TurnPipeline {
  /** By the arguments' text: in practice one group per limited route. */
  private groups = new Map<string, Group>();

  constructor(private readonly redis: TurnClient) {
    redis.defineCommand('rateLimitTurn', { lua: turnScript() });
    new RedisStore(false, false, redis); // the plugin's read script (rateLimitRead)
  }

  /** The plugin's call: key, timeWindow, max, continueExceeding, exponentialBackoff, callback. */
  rateLimit(key: string, timeWindow: number, max: number, continueExceeding: boolean, exponentialBackoff: boolean, reply: Reply): void {
    if (this.groups.size === 0) setImmediate(this.flush);
    const id = `${timeWindow} ${max} ${continueExceeding} ${exponentialBackoff}`;
    let group = this.groups.get(id);
    if (!group) this.groups.set(id, (group = { args: [timeWindow, max, continueExceeding, exponentialBackoff], keys: [], replies: [] }));
    group.keys.push(key);
    group.replies.push(reply);
  }

  rateLimitRead(...args: unknown[]): void {
    this.redis.rateLimitRead(...args);
  }

  private readonly flush = (): void => {
    const groups = [...this.groups.values()];
    this.groups = new Map();
    const keys = groups.flatMap((g) => g.keys);
    const args = groups.flatMap((g) => [g.keys.length, ...g.args]);
    this.redis.rateLimitTurn(keys.length, ...keys, ...args, (error: Error | null, answer: string | null) => {
      const counts = error ? [] : answer!.split(' ');
      let at = 0;
      for (const group of groups) {
        for (const reply of group.replies) {
          if (error) reply(error, null);
          else reply(null, [Number(counts[at]), Number(counts[at + 1])]);
          at += 2;
        }
      }
    });
  };
}

function fallbackStore(link: RedisLink, keyPrefix: string): new (params: ChildOptions) => CounterStore {
  class FallbackStore implements CounterStore {
    private readonly redisStore: CounterStore;
    private readonly local: CounterStore;
    constructor(params: ChildOptions, prefix = keyPrefix) {
      this.redisStore = new RedisStore(params.continueExceeding, params.exponentialBackoff, link.pipeline, prefix);
      this.local = new LocalStore(params.continueExceeding, params.exponentialBackoff);
    }

    incr(key: string, cb: Parameters<CounterStore['incr']>[1], timeWindow: number, max: number): void {
      if (!link.ready) {
        link.fellBack();
        return this.local.incr(key, cb, timeWindow, max);
      }
      this.redisStore.incr(
        key,
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

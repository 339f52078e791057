import type { Redis } from 'ioredis';

/** What a counter answers the plugin: the count with this request, and the window's time left (ms). */
export interface Count {
  current: number;
  ttl: number;
}
type Answer = (err: Error | null, count: Count | null) => void;

/**
 * Limits whose maximum is at least this may be decided in this process (below): the API limits
 * that see volume. The small ones (sign-in, portal links) guard against guessing and always wait
 * for Redis's own count.
 */
export const DECIDED_HERE_FROM = 100;
/** A request is decided here only while the count stays within this share of the maximum... */
const SHARE_DECIDED_HERE = 0.5;
/** ...and Redis answered for the key this recently, so other processes' counts are seen. */
const FRESH_MS = 100;
/**
 * Keys remembered at most (one per client address and limit): many addresses in one window must
 * not grow the process's memory without bound. A key forgotten early only waits for Redis once.
 */
const MAX_KEYS = 10_000;
/** Forgotten at a time when full (the oldest idle ones): the scan is paid once per this many new keys. */
const FORGET_AT_ONCE = 100;
/**
 * Increments of requests already answered (decided here) go to Redis at most this late: a call
 * carries this long's requests instead of one event-loop turn's. A request that waits for Redis's
 * count sends at once.
 */
export const COUNT_EVERY_MS = 10;

/**
 * Adds each key's increment and starts its window on the first; answers "current ttl" per key, in
 * one string (one decode for the client). KEYS: the counters; ARGV: per key, its increment and its
 * window in ms. A key found without an expiry (its PEXPIRE lost) gets one, so it cannot stick.
 */
const ADD_SCRIPT = `
local out = {}
for i = 1, #KEYS do
  local n, window = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local current = redis.call('INCRBY', KEYS[i], n)
  local ttl = window
  if current == n then redis.call('PEXPIRE', KEYS[i], window)
  else
    ttl = redis.call('PTTL', KEYS[i])
    if ttl < 0 then redis.call('PEXPIRE', KEYS[i], window); ttl = window end
  end
  out[i] = current .. ' ' .. ttl
end
return table.concat(out, ' ')`;

/** A key as this process knows it. */
interface Entry {
  key: string;
  window: number;
  /** Redis's count at its last answer, when that was, and when the window then ended (ms epoch). */
  shared: number;
  /** The last answer held increments of other processes: the key is counted elsewhere too. */
  sharedWithOthers: boolean;
  answeredAt: number;
  resetAt: number;
  /** Increments sent in the call in flight, and those waiting for the next call. */
  sent: number;
  pending: number;
  /** Requests waiting for Redis's count (the next call's), in order. */
  waiting: Answer[];
}

interface Sent {
  entry: Entry;
  count: number;
  waiting: Answer[];
}

type AddClient = Redis & { tesseraRateLimitAdd(numberOfKeys: number, ...rest: unknown[]): void };

/**
 * Rate-limit counters in Redis, shared by every process, with one call in flight at a time that
 * carries every key's increments since the previous one (one `INCRBY` per key, however many
 * requests). A request of a large limit, on a key only this process has been counting, whose count
 * (as Redis last told it, plus what this process added since) stays within half the maximum is
 * answered at once and counted in a call within `COUNT_EVERY_MS`; any other request (near the limit,
 * a small limit, a key another process counts too, or not answered for `FRESH_MS`) waits for Redis's
 * count, which is exact, and its call goes at once. Why and what it costs: docs/decisions/operations.md.
 */
export class SharedCounts {
  private readonly entries = new Map<string, Entry>();
  /** The entries with pending increments, for the next call. */
  private dirty: Entry[] = [];
  private inFlight = false;
  /** The next call is set for the next turn (a request waits), or `later` for COUNT_EVERY_MS (none waits). */
  private scheduled = false;
  private later: NodeJS.Timeout | undefined;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MAX_KEYS,
    private readonly countEveryMs = COUNT_EVERY_MS,
  ) {
    redis.defineCommand('tesseraRateLimitAdd', { lua: ADD_SCRIPT });
    // Forget keys whose window has ended: one entry per client address and limit would pile up.
    this.sweeper = setInterval(() => this.sweep(), 10_000).unref();
  }

  /** Counts one request against `key` (window `window` ms, `max` requests in it). */
  incr(key: string, answer: Answer, window: number, max: number): void {
    const now = this.now();
    let entry = this.entries.get(key);
    if (!entry) {
      if (this.entries.size >= this.maxKeys) this.forgetOldest();
      this.entries.set(key, (entry = { key, window, shared: 0, sharedWithOthers: true, answeredAt: 0, resetAt: 0, sent: 0, pending: 0, waiting: [] }));
    }
    if (entry.pending++ === 0) this.dirty.push(entry);
    const current = entry.shared + entry.sent + entry.pending;
    if (max >= DECIDED_HERE_FROM && !entry.sharedWithOthers && entry.resetAt > now && now - entry.answeredAt < FRESH_MS && current <= max * SHARE_DECIDED_HERE) {
      answer(null, { current, ttl: entry.resetAt - now });
      this.schedule(false);
    } else {
      entry.waiting.push(answer);
      this.schedule(true);
    }
  }

  /** Stops the sweeper and a call set for later (the app closes). */
  close(): void {
    clearInterval(this.sweeper);
    clearTimeout(this.later);
  }

  /** Sets the next call: on the next turn when a request waits for it, else within COUNT_EVERY_MS. */
  private schedule(waiting: boolean): void {
    if (this.inFlight || this.scheduled) return;
    if (waiting) {
      clearTimeout(this.later);
      this.later = undefined;
      this.scheduled = true;
      setImmediate(this.send);
    } else {
      this.later ??= setTimeout(this.send, this.countEveryMs);
    }
  }

  /** One call with every key's pending increments; the next goes when it answers. */
  private readonly send = (): void => {
    this.scheduled = false;
    clearTimeout(this.later);
    this.later = undefined;
    const batch: Sent[] = this.dirty.map((entry) => ({ entry, count: entry.pending, waiting: entry.waiting }));
    this.dirty = [];
    for (const { entry } of batch) {
      entry.sent += entry.pending;
      entry.pending = 0;
      entry.waiting = [];
    }
    if (batch.length === 0) return;
    this.inFlight = true;
    const args: unknown[] = batch.map((s) => s.entry.key);
    for (const s of batch) args.push(s.count, s.entry.window);
    (this.redis as AddClient).tesseraRateLimitAdd(batch.length, ...args, (error: Error | null, reply: string | null) => {
      this.inFlight = false;
      if (error) this.failed(batch, error);
      else this.counted(batch, reply!);
      if (this.dirty.length > 0) this.schedule(this.dirty.some((entry) => entry.waiting.length > 0));
    });
  };

  private counted(batch: Sent[], reply: string): void {
    const answeredAt = this.now();
    const numbers = reply.split(' ');
    batch.forEach(({ entry, count, waiting }, i) => {
      const current = Number(numbers[2 * i]);
      const ttl = Number(numbers[2 * i + 1]);
      entry.sent -= count;
      // Between this answer and the key's previous one this process added `count` (one call at a time).
      const before = entry.resetAt > answeredAt ? entry.shared : 0;
      entry.sharedWithOthers = current !== before + count;
      entry.shared = current;
      entry.answeredAt = answeredAt;
      entry.resetAt = answeredAt + ttl;
      // The waiting requests take the call's highest counts (those answered at once came first).
      waiting.forEach((answer, w) => answer(null, { current: current - waiting.length + 1 + w, ttl }));
    });
  }

  /** Redis failed: the waiting requests get the error (the caller counts them in memory); the key's view is dropped. */
  private failed(batch: Sent[], error: Error): void {
    for (const { entry, count, waiting } of batch) {
      entry.sent -= count;
      entry.answeredAt = 0;
      for (const answer of waiting) answer(error, null);
    }
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.resetAt <= now && idle(entry)) this.entries.delete(key);
    }
  }

  /** The oldest keys with nothing in flight, in insertion order (a Map's): their next request asks Redis. */
  private forgetOldest(): void {
    let forgotten = 0;
    for (const [key, entry] of this.entries) {
      if (!idle(entry)) continue;
      this.entries.delete(key);
      if (++forgotten === FORGET_AT_ONCE) return;
    }
  }
}

const idle = (entry: Entry): boolean => entry.sent === 0 && entry.pending === 0 && entry.waiting.length === 0;

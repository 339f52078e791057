import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Count, SharedCounts } from '../../src/http/rate-limit-counts.ts';
import { SHARED_REDIS_URL, uniquePrefix } from '../support/redis.ts';

const prefix = uniquePrefix('shared-counts');
const MINUTE = 60_000;
const probe = new Redis(SHARED_REDIS_URL);
const clients: Redis[] = [];
const counters: SharedCounts[] = [];

/** One process's counters: its own connection, and a clock the test may move. */
function newProcess(clock = { now: Date.now() }, maxKeys?: number, countEveryMs?: number) {
  const redis = new Redis(SHARED_REDIS_URL);
  clients.push(redis);
  const counts = new SharedCounts(redis, () => clock.now, maxKeys, countEveryMs);
  counters.push(counts);
  // The script calls this process makes.
  const calls = { n: 0 };
  const client = redis as unknown as { tesseraRateLimitAdd: (...args: unknown[]) => void };
  const add = client.tesseraRateLimitAdd.bind(redis);
  client.tesseraRateLimitAdd = (...args) => {
    calls.n++;
    add(...args);
  };
  return { counts, clock, calls };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** `n` requests in one event-loop turn; resolves with their answers and how many came at once. */
async function burst(counts: SharedCounts, key: string, max: number, n: number) {
  let atOnce = 0;
  const answers: Promise<Count>[] = [];
  for (let i = 0; i < n; i++) {
    let sync = true;
    answers.push(
      new Promise<Count>((resolve, reject) =>
        counts.incr(prefix + key, (err, res) => {
          if (sync) atOnce++;
          err ? reject(err) : resolve(res!);
        }, MINUTE, max),
      ),
    );
    sync = false;
  }
  return { counts: await Promise.all(answers), atOnce };
}

const inRedis = async (key: string) => Number(await probe.get(prefix + key));
/** Until every increment sent has been answered (the next call goes when one answers). */
const settled = () => new Promise((resolve) => setTimeout(resolve, 50));

afterEach(() => {
  for (const c of counters.splice(0)) c.close();
  for (const r of clients.splice(0)) r.disconnect();
});
afterAll(async () => {
  const keys = await probe.keys(`${prefix}*`);
  if (keys.length) await probe.del(...keys);
  probe.disconnect();
});

describe('SharedCounts', () => {
  it('counts a key first seen from Redis, each request exactly once, with the window in Redis', async () => {
    const { counts } = newProcess();
    const first = await burst(counts, 'first', 1000, 30);
    expect(first.atOnce).toBe(0);
    expect(first.counts.map((c) => c.current).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(await inRedis('first')).toBe(30);
    const ttl = await probe.pttl(prefix + 'first');
    expect(ttl).toBeGreaterThan(MINUTE - 5000);
    expect(ttl).toBeLessThanOrEqual(MINUTE);
  });

  it('answers a large limit at once while its count stays within half the maximum, and still counts every request in Redis', async () => {
    const { counts } = newProcess();
    await burst(counts, 'large', 1000, 1);
    const then = await burst(counts, 'large', 1000, 200);
    expect(then.atOnce).toBe(200);
    expect(then.counts.map((c) => c.current)).toEqual(Array.from({ length: 200 }, (_, i) => i + 2));
    await settled();
    expect(await inRedis('large')).toBe(201);
  });

  it('sends the counts of requests answered at once later, many turns in one call; a request that waits sends at once', async () => {
    const { counts, clock, calls } = newProcess({ now: Date.now() }, undefined, 300);
    await burst(counts, 'later', 1000, 1); // first seen: waits, its call goes on the next turn
    expect(calls.n).toBe(1);
    for (let turn = 0; turn < 5; turn++) {
      expect((await burst(counts, 'later', 1000, 10)).atOnce).toBe(10);
      await nextTurn();
    }
    expect(calls.n).toBe(1); // the 50 are held for the delay
    expect(await inRedis('later')).toBe(1);
    // A request that must wait (its view went stale) takes them along at once.
    clock.now += 150;
    const waited = burst(counts, 'later', 1000, 1);
    await nextTurn();
    expect(calls.n).toBe(2);
    expect((await waited).counts[0]!.current).toBe(52);
    expect(await inRedis('later')).toBe(52);
    // Without one, the delay sends them: one call for all.
    await burst(counts, 'later', 1000, 7);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(calls.n).toBe(3);
    expect(await inRedis('later')).toBe(59);
  });

  it('waits for Redis past half the maximum, so the requests at the limit get exact counts', async () => {
    const { counts } = newProcess();
    await burst(counts, 'edge', 100, 1);
    const then = await burst(counts, 'edge', 100, 119);
    expect(then.atOnce).toBe(49); // counts 2 to 50
    const sorted = then.counts.map((c) => c.current).sort((a, b) => a - b);
    expect(sorted).toEqual(Array.from({ length: 119 }, (_, i) => i + 2));
    expect(sorted.filter((c) => c <= 100)).toHaveLength(99);
  });

  it('never decides a small limit here (sign-in, portal links): every request waits for Redis', async () => {
    const { counts } = newProcess();
    await burst(counts, 'small', 10, 1);
    const then = await burst(counts, 'small', 10, 3);
    expect(then.atOnce).toBe(0);
    expect(then.counts.map((c) => c.current).sort()).toEqual([2, 3, 4]);
  });

  it('waits for Redis again when its last count of the key is older than 100 ms, and when the window has ended', async () => {
    const { counts, clock } = newProcess();
    await burst(counts, 'stale', 1000, 1);
    expect((await burst(counts, 'stale', 1000, 1)).atOnce).toBe(1);
    await settled();
    clock.now += 150;
    expect((await burst(counts, 'stale', 1000, 1)).atOnce).toBe(0);
    expect((await burst(counts, 'stale', 1000, 1)).atOnce).toBe(1);
    await settled();
    clock.now += MINUTE;
    expect((await burst(counts, 'stale', 1000, 1)).atOnce).toBe(0);
  });

  it("sees another process's counts: a key it has not counted yet is read from Redis", async () => {
    const a = newProcess();
    const b = newProcess();
    await burst(a.counts, 'two', 1000, 1);
    await burst(a.counts, 'two', 1000, 299);
    await settled();
    const [fromB] = (await burst(b.counts, 'two', 1000, 1)).counts;
    expect(fromB!.current).toBe(301);
  });

  it('decides nothing here for a key another process is counting too, until its counts stop moving', async () => {
    const a = newProcess();
    const b = newProcess();
    await burst(a.counts, 'busy', 1000, 1);
    expect((await burst(a.counts, 'busy', 1000, 5)).atOnce).toBe(5);
    await settled();
    await burst(b.counts, 'busy', 1000, 1);
    // A has not heard of B's request yet; the answer to this one shows it, so A then waits for Redis.
    expect((await burst(a.counts, 'busy', 1000, 1)).atOnce).toBe(1);
    await settled();
    expect((await burst(a.counts, 'busy', 1000, 1)).atOnce).toBe(0);
    // B stopped: A's last answer held only its own request.
    expect((await burst(a.counts, 'busy', 1000, 1)).atOnce).toBe(1);
    await settled();
    expect(await inRedis('busy')).toBe(10);
  });

  it('two processes counting one key at once admit exactly the maximum between them', async () => {
    const a = newProcess();
    const b = newProcess();
    const max = 200;
    let admitted = 0;
    // 40 turns of 10 requests on each, a few ms apart (a client at thousands of requests a second on
    // each process): their counts cross half the maximum, then the maximum.
    for (let turn = 0; turn < 40; turn++) {
      const turns = await Promise.all([burst(a.counts, 'race', max, 10), burst(b.counts, 'race', max, 10)]);
      admitted += turns.flatMap((t) => t.counts).filter((c) => c.current <= max).length;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await settled();
    expect(await inRedis('race')).toBe(800);
    expect(admitted).toBe(max);
  });

  it('remembers a bounded number of keys: past it the oldest idle ones are forgotten, and still counted exactly', async () => {
    // A clock that stands still: no view goes stale, so only forgetting can make the key wait.
    const { counts } = newProcess({ now: Date.now() }, 150);
    await burst(counts, 'kept', 1000, 1);
    expect((await burst(counts, 'kept', 1000, 1)).atOnce).toBe(1);
    // 300 other clients, one request each: more keys than the process keeps.
    for (let i = 0; i < 300; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => burst(counts, `client-${i + j}`, 1000, 1)));
    }
    await settled();
    // The first key was forgotten: its next request asks Redis, which still has every count.
    const again = await burst(counts, 'kept', 1000, 1);
    expect(again.atOnce).toBe(0);
    expect(again.counts[0]!.current).toBe(3);
    expect(await inRedis('client-0')).toBe(1);
    expect(await inRedis('client-299')).toBe(1);
  });

  it('on a Redis error the waiting requests get the error (their callers count them in memory)', async () => {
    const { counts } = newProcess();
    clients[0]!.disconnect();
    await expect(burst(counts, 'down', 1000, 2)).rejects.toThrow();
  });
});

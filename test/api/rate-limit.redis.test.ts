import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { ownRedis, SHARED_REDIS_URL, uniquePrefix, type OwnRedis } from '../support/redis.ts';
import { createTestDatabase, type TestDatabase } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';

const validate = (app: FastifyInstance) =>
  app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', payload: { licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', productId: 'p_x' } });

/** Apps on one database with their own settings (each a separate process in production). */
function useApps(env: () => Record<string, string>, logStream?: NodeJS.WritableStream) {
  const apps: FastifyInstance[] = [];
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    store = await database.open();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await store.close();
    await database.drop();
  });
  return async () => {
    const config = loadConfig({ ...database.env, RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '4', ...env() });
    const app = await buildApp({ config, services: createServices(store, config.secretKey), logger: logStream !== undefined, logStream });
    apps.push(app);
    await app.ready();
    return app;
  };
}

describe('rate limits in memory', () => {
  const newApp = useApps(() => ({}));

  it('every limited answer carries RateLimit-Limit, -Remaining and -Reset; the 429 also Retry-After', async () => {
    const app = await newApp();
    const first = await validate(app);
    expect(first.statusCode).toBe(400);
    expect(first.headers).toMatchObject({ 'ratelimit-limit': '4', 'ratelimit-remaining': '3', 'ratelimit-reset': '60' });
    for (let i = 0; i < 3; i++) await validate(app);
    const limited = await validate(app);
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('rate_limited');
    expect(limited.headers).toMatchObject({ 'ratelimit-limit': '4', 'ratelimit-remaining': '0' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('rate limits through Redis', () => {
  const prefix = uniquePrefix('rate-limit');
  const newApp = useApps(() => ({ REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix }));
  const redis = new Redis(SHARED_REDIS_URL);
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('two app instances share one limit', async () => {
    const [a, b] = [await newApp(), await newApp()];
    expect((await validate(a)).headers['ratelimit-remaining']).toBe('3');
    expect((await validate(b)).headers['ratelimit-remaining']).toBe('2');
    expect((await validate(a)).headers['ratelimit-remaining']).toBe('1');
    expect((await validate(b)).statusCode).toBe(400);
    expect((await validate(a)).statusCode).toBe(429);
    expect((await validate(b)).statusCode).toBe(429);
    expect(await redis.keys(`${prefix}*`)).toEqual([`${prefix}public|127.0.0.1|/api/v1/public/licenses/validate`]);
  });

  it('requests of one event-loop turn, counted in one script call for all their keys, are each counted exactly once', async () => {
    const app = await newApp();
    // Another client address: its own counter, beside the shared one of the test above.
    const from = (ip: string) => app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', remoteAddress: ip, payload: { licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', productId: 'p_x' } });
    const answers = await Promise.all([...Array.from({ length: 6 }, () => from('10.0.0.1')), from('10.0.0.2'), from('10.0.0.2')]);
    const first = answers.slice(0, 6);
    expect(first.map((r) => r.statusCode).sort()).toEqual([400, 400, 400, 400, 429, 429]);
    expect(first.map((r) => r.headers['ratelimit-remaining']).sort()).toEqual(['0', '0', '0', '1', '2', '3']);
    expect(answers.slice(6).map((r) => r.headers['ratelimit-remaining']).sort()).toEqual(['2', '3']);
  });

  it('one turn with two limits (public API and dashboard sign-in: other windows and maximums) counts each under its own', async () => {
    const app = await newApp();
    // The dashboard's sign-in form: its own maximum and a 15-minute window.
    const login = () => app.inject({ method: 'POST', url: '/dashboard/login', remoteAddress: '10.0.0.3', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40b.c&password=x' });
    const publicApi = () => app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', remoteAddress: '10.0.0.3', payload: { licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', productId: 'p_x' } });
    const answers = await Promise.all([login(), publicApi(), login(), publicApi(), publicApi()]);
    const [logins, publics] = [[answers[0]!, answers[2]!], [answers[1]!, answers[3]!, answers[4]!]];
    expect(logins.map((r) => r.headers['ratelimit-limit'])).toEqual(['30', '30']);
    expect(logins.map((r) => r.headers['ratelimit-remaining']).sort()).toEqual(['28', '29']);
    expect(Math.max(...logins.map((r) => Number(r.headers['ratelimit-reset'])))).toBeGreaterThan(60);
    expect(publics.map((r) => r.headers['ratelimit-limit'])).toEqual(['4', '4', '4']);
    expect(publics.map((r) => r.headers['ratelimit-remaining']).sort()).toEqual(['1', '2', '3']);
    for (const r of answers) expect(Number(r.headers['ratelimit-reset'])).toBeGreaterThan(0);
  });

  it('portal limits (route config) are counted in Redis too, under their route', async () => {
    const app = await newApp();
    const res = await app.inject({ method: 'GET', url: '/portal/request' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['ratelimit-limit']).toBeDefined();
    expect((await redis.keys(`${prefix}GET/portal/request-*`)).length).toBe(1);
  });
});

describe('rate limits when Redis goes away', () => {
  let server: OwnRedis;
  const prefix = uniquePrefix('outage');
  let logs = '';
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs += String(chunk);
      done();
    },
  });
  const newApp = useApps(() => ({ REDIS_URL: server.url, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PUBLIC_PER_MINUTE: '1000', LOG_LEVEL: 'info' }), logStream);
  /** The outage lines logged in `text`, in order: 'down' for a warning, 'up' for its end. */
  const outageLines = (text: string) =>
    text.split('\n').flatMap((line) => (line.includes('Redis is unreachable') ? ['down'] : line.includes('Redis is reachable again') ? ['up'] : []));
  beforeAll(async () => {
    server = await ownRedis();
    await server.start();
  });
  afterAll(async () => server.kill());

  const fallbacks = async (app: FastifyInstance) => {
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(/^tessera_rate_limit_fallback_total (\d+)/m.exec(text)?.[1]);
  };

  it('keeps serving (no 5xx) while Redis is down, counts in memory, and resumes in Redis when it is back', async () => {
    const app = await newApp();
    const remaining = async () => Number((await validate(app)).headers['ratelimit-remaining']);
    await waitFor(async () => (await remaining()) < 999, { message: 'counting in Redis' });
    expect(await fallbacks(app)).toBe(0);

    const killedAt = logs.length;
    await server.kill();
    // Requests answered from the process's last count of the key before the failed call tells it of
    // the outage are not counted in memory (decisions/operations.md); every one after it is.
    const during: Awaited<ReturnType<typeof validate>>[] = [];
    await waitFor(
      async () => {
        during.push(...(await Promise.all(Array.from({ length: 20 }, () => validate(app)))));
        return (await fallbacks(app)) >= 20;
      },
      { message: 'counting in memory' },
    );
    // Down long enough for several reconnection attempts (100, 200, 300 ms apart), requests still flowing.
    const downUntil = Date.now() + 700;
    while (Date.now() < downUntil) {
      during.push(...(await Promise.all(Array.from({ length: 5 }, () => validate(app)))));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(during.every((r) => r.statusCode === 400)).toBe(true);
    expect(during.every((r) => r.headers['ratelimit-limit'] === '1000')).toBe(true);

    await server.start();
    const probe = new Redis(server.url);
    try {
      // Back in Redis: the counter lives there again (the restarted server began empty).
      await waitFor(async () => (await validate(app)).statusCode === 400 && (await probe.keys(`${prefix}*`)).length === 1, {
        timeoutMs: 10_000,
        message: 'counting in Redis again',
      });
      const before = await fallbacks(app);
      expect((await validate(app)).statusCode).toBe(400);
      expect(await fallbacks(app)).toBe(before);
      // One warning for the whole outage (however many requests and reconnection attempts), one line when it ended.
      // A command that timed out (250 ms) on a loaded machine before the kill is an outage of its own,
      // already logged: then the kill adds no warning, as the process already counts in memory.
      const atKill = outageLines(logs.slice(0, killedAt)).at(-1);
      const sinceKill = outageLines(logs.slice(killedAt));
      expect(sinceKill).toContain('up');
      expect(sinceKill.slice(0, sinceKill.indexOf('up') + 1)).toEqual(atKill === 'down' ? ['up'] : ['down', 'up']);
    } finally {
      probe.disconnect();
    }
  });
});

/**
 * `node --import tsx bench/limits-inprocess.ts`: public validate with rate limits off, in memory
 * and in Redis, in-process (app.inject, no HTTP or load generator), on SQLite: CPU µs per request
 * of this process (the Redis server's own CPU not counted), 20 requests in flight, the three
 * variants alternated round by round. Run it in two work trees one after the other for a
 * before/after.
 *
 *   N=20000 ROUNDS=4 REDIS_URL=redis://127.0.0.1:6379 node --import tsx bench/limits-inprocess.ts
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createServices } from '../src/services.ts';
import { openStore } from '../src/storage/index.ts';
import { deviceOf, seed } from './seed.ts';

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const IN_FLIGHT = 20;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `tessera-bench-limits:${randomBytes(4).toString('hex')}:`;
const dataDir = mkdtempSync(join(tmpdir(), 'tessera-bench-limits-'));
const fixture = await seed({ dataDir }, 1000);
const limitsOn = { RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000' };
const envs: Record<string, Record<string, string>> = {
  off: { RATE_LIMIT: 'off' },
  memory: limitsOn,
  redis: { ...limitsOn, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix },
};

const store = await openStore({ dataDir });
const apps = new Map<string, FastifyInstance>();
for (const [name, env] of Object.entries(envs)) {
  const config = loadConfig({ DATA_DIR: dataDir, ...env });
  const app = await buildApp({ config, services: createServices(store, config.secretKey, undefined, config), logger: false });
  await app.ready();
  apps.set(name, app);
}

async function run(app: FastifyInstance): Promise<number> {
  let sent = 0;
  const started = process.cpuUsage();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (sent < N) {
        const i = sent++ % fixture.keys.length;
        const payload = `{"licenseKey":"${fixture.keys[i]}","deviceIdentifier":"${deviceOf(i)}","productId":"${fixture.productId}"}`;
        const res = await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: { 'content-type': 'application/json' }, payload });
        if (res.statusCode !== 200) throw new Error(res.body);
      }
    }),
  );
  const used = process.cpuUsage(started);
  return (used.user + used.system) / N;
}

const figures = new Map<string, number[]>([...apps.keys()].map((k) => [k, []]));
for (const app of apps.values()) await run(app); // warm-up
for (let round = 0; round < ROUNDS; round++) for (const [name, app] of apps) figures.get(name)!.push(await run(app));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const off = median(figures.get('off')!);
for (const [name, xs] of figures) {
  console.log(`${name}: µs CPU per validate ${xs.map((x) => x.toFixed(1)).join(' ')} | median ${median(xs).toFixed(1)} (+${(median(xs) - off).toFixed(1)} over off)`);
}
for (const app of apps.values()) await app.close();
await store.close();
const redis = new Redis(redisUrl);
const keys = await redis.keys(`${prefix}*`);
if (keys.length) await redis.del(...keys);
redis.disconnect();
rmSync(dataDir, { recursive: true, force: true });

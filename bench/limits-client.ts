/**
 * `node --import tsx bench/limits-client.ts --base <tree> [--per-call 20] [--checks 100000] [--rounds 6]`:
 * the client side of rate limits in Redis alone (the plugin, our store, ioredis; no HTTP, no
 * service): CPU µs per limit check of this process, `--per-call` checks issued in one event-loop
 * turn (so one script call carries them), through `registerRateLimits` of two built work trees
 * (`<tree>/dist`), alternated round by round. The Redis server's own CPU is not counted.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';

const { values: flags } = parseArgs({
  options: {
    base: { type: 'string' },
    tree: { type: 'string', default: '.' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    'per-call': { type: 'string', default: '20' },
    checks: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '6' },
  },
});
if (!flags.base) throw new Error('--base <work tree> is required (built: npm run build there)');
const perCall = Number(flags['per-call']);
const checks = Number(flags.checks);
type Check = (req: object) => Promise<unknown>;

async function limiter(name: string, tree: string): Promise<{ check: Check; close: () => Promise<void> }> {
  const { registerRateLimits } = await import(pathToFileURL(resolve(tree, 'dist/http/rate-limit.js')).href);
  const app = Fastify({ logger: false });
  await registerRateLimits(app, { redisUrl: flags.redis, keyPrefix: `bench-limits-client:${name}:${process.pid}:` });
  await app.ready();
  // Four client addresses, as a turn's requests come from a few clients.
  const check = app.createRateLimit({ max: 1e9, timeWindow: 60_000, keyGenerator: (req) => (req as unknown as { k: string }).k }) as unknown as Check;
  return { check, close: () => app.close() };
}

async function run(check: Check): Promise<number> {
  const started = process.cpuUsage();
  for (let done = 0; done < checks; done += perCall) {
    await Promise.all(Array.from({ length: perCall }, (_, i) => check({ k: `client-${i % 4}`, ip: '192.0.2.1', routeOptions: { config: {} } })));
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / checks;
}

const trees = { base: await limiter('base', flags.base), this: await limiter('this', flags.tree) };
for (const t of Object.values(trees)) await run(t.check); // warm-up
const figures: Record<string, number[]> = { base: [], this: [] };
for (let round = 0; round < Number(flags.rounds); round++) for (const [name, t] of Object.entries(trees)) figures[name]!.push(await run(t.check));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const [name, xs] of Object.entries(figures)) console.log(`${name}: µs CPU per check (${perCall} a call) ${xs.map((x) => x.toFixed(2)).join(' ')} | median ${median(xs).toFixed(2)}`);
for (const t of Object.values(trees)) await t.close();

import type autocannon from 'autocannon';
import type { Scenario, ScenarioContext } from './scenarios.ts';

/**
 * Issue 35's figures: a floating seat's heartbeat (public validate plus its lease's one durable
 * write), and public validate of licenses that carry entitlements (the answer and the token claim
 * carry them; the hot path splits one text column). Each scenario's `prepare` makes its own
 * licenses over the server API, each with one active device, on the first server of the block.
 */

const json = { 'content-type': 'application/json' };
const pick = (n: number): number => Math.floor(Math.random() * n);
/** Licenses per scenario: a few thousand rows, all in memory on either store, as the seeded ones at 10,000. */
const LICENSES = 2000;
const PARALLEL = 16;
/** A "Pro" tier as a vendor would sell it. */
const ENTITLEMENTS = ['pro', 'export.pdf', 'export.svg', 'sync', 'teams', 'api.write'];
/** A day: no lease lapses during a run, so every heartbeat renews a live one. */
const LEASE_SECONDS = 86_400;
const SETTLE_MS = 20_000;

interface Seats {
  productId: string;
  keys: string[];
}

async function api(ctx: ScenarioContext, method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${ctx.baseUrl}/api/v1${path}`, { method, headers: { ...json, authorization: `Bearer ${ctx.fixture.apiKey}`, ...headers }, body: JSON.stringify(body) });
  const answer = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** `LICENSES` licenses of `productId`, each with the device `seat-i` activated through the public API. */
async function licensesWithDevices(ctx: ScenarioContext, productId: string, extra: Record<string, unknown>): Promise<string[]> {
  const keys: string[] = new Array(LICENSES);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < LICENSES; i = next++) {
      const license = await api(ctx, 'POST', '/licenses', { productId, type: 'perpetual', maxDevices: 3, ...extra });
      keys[i] = license.key as string;
      const res = await fetch(`${ctx.baseUrl}/api/v1/public/licenses/activate`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ licenseKey: keys[i], deviceIdentifier: `seat-${i}`, deviceName: 'Bench seat', productId }),
      });
      if (!res.ok) throw new Error(`activate: HTTP ${res.status} ${await res.text()}`);
      // On PostgreSQL the process then holds the row in its validation cache, as a client validating at start would.
      await fetch(`${ctx.baseUrl}/api/v1/public/licenses/validate`, { method: 'POST', headers: json, body: JSON.stringify({ licenseKey: keys[i], deviceIdentifier: `seat-${i}`, productId }) }).then((r) => r.arrayBuffer());
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  // The store works off those 6,000 write units (PostgreSQL's WAL and checkpoint, SQLite's) before
  // the load starts: measured at once, PostgreSQL's validate ran at 9,100 req/s with the server at
  // 55% CPU, and at 15,200 (95%) after this wait, every read a cache hit both times.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  return keys;
}

/** PostgreSQL's validation cache counts so far (bench output: whether a scenario's reads were answered from memory). */
async function cacheCounts(ctx: ScenarioContext, when: string): Promise<void> {
  if (ctx.store !== 'postgres') return;
  const text = await (await fetch(`${ctx.baseUrl}/metrics`)).text();
  const counts = [...text.matchAll(/^tessera_validation_cache_(entries|lookups_total)(\{[^}]*\})? (\d+)/gm)].map((m) => `${m[1]}${m[2] ?? ''} ${m[3]}`);
  process.stderr.write(`  validation cache ${when}: ${counts.join(', ')}\n`);
}

/** Made once per server block (a block's servers share a store; the next block's store is new). */
const made = new Map<string, Seats>();
const seatsOf = (ctx: ScenarioContext, what: string): Seats => {
  const seats = made.get(`${what} ${ctx.baseUrl} ${ctx.fixture.productId}`);
  if (!seats) throw new Error(`${what}: prepare did not run`);
  return seats;
};

function requestOn(path: string, what: string) {
  return (ctx: ScenarioContext): autocannon.Request => ({
    method: 'POST',
    path,
    headers: json,
    setupRequest: (req) => {
      const { productId, keys } = seatsOf(ctx, what);
      const i = pick(keys.length);
      return { ...req, body: `{"licenseKey":"${keys[i]}","deviceIdentifier":"seat-${i}","productId":"${productId}"}` };
    },
  });
}

export const modelScenarios: Scenario[] = [
  {
    // A random floating seat renews its lease: the validation checks, then one conditional UPDATE committed.
    name: 'public heartbeat (floating)',
    prepare: async (ctx) => {
      await cacheCounts(ctx, 'before "public heartbeat (floating)"');
      const product = await api(ctx, 'POST', '/products', { name: 'Bench floating', floating: { enabled: true, leaseSeconds: LEASE_SECONDS } });
      const productId = product.id as string;
      made.set(`heartbeat ${ctx.baseUrl} ${ctx.fixture.productId}`, { productId, keys: await licensesWithDevices(ctx, productId, {}) });
    },
    request: requestOn('/api/v1/public/licenses/heartbeat', 'heartbeat'),
    check: (status, body) => {
      const b = body as { isValid?: unknown; device?: { leaseExpiresAt?: unknown } };
      if (status !== 200 || b.isValid !== true) return `HTTP ${status}: ${JSON.stringify(body)}`;
      return typeof b.device?.leaseExpiresAt === 'string' ? undefined : `no lease: ${JSON.stringify(body)}`;
    },
  },
  validateWith('public validate (entitlements)', ENTITLEMENTS),
  // The control: licenses made the same way, at the same time in the run, without entitlements.
  validateWith('public validate (control: no codes)', []),
];

/** Public validate of a random license holding `codes` (in the answer), made by the scenario on the seeded product. */
function validateWith(name: string, codes: string[]): Scenario {
  return {
    name,
    prepare: async (ctx) => {
      await cacheCounts(ctx, `before "${name}"`);
      made.set(`${name} ${ctx.baseUrl} ${ctx.fixture.productId}`, { productId: ctx.fixture.productId, keys: await licensesWithDevices(ctx, ctx.fixture.productId, { entitlements: codes }) });
      await cacheCounts(ctx, 'after its licenses were made and validated once');
    },
    request: requestOn('/api/v1/public/licenses/validate', name),
    check: (status, body) => {
      const b = body as { isValid?: unknown; license?: { entitlements?: unknown } };
      if (status !== 200 || b.isValid !== true) return `HTTP ${status}: ${JSON.stringify(body)}`;
      return Array.isArray(b.license?.entitlements) && b.license.entitlements.length === codes.length ? undefined : `entitlements not as made: ${JSON.stringify(body)}`;
    },
  };
}

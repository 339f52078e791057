/**
 * Instructions per request, for before/after comparisons that the machine's other load cannot
 * disturb: the app of a built work tree (`<tree>/dist`, so two versions compare), in process,
 * requests through `app.inject` (routing, parsing, validation, hooks, the service, the store,
 * serialization, the access log; not the socket), `--concurrency` at a time (activations then
 * group-commit as under load). Run it twice under callgrind with two counts; the difference of the
 * totals over the difference of the counts is the cost of one request, start-up and warm-up cancel:
 *
 *   for n in 2000 4000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
 *     node --max-semi-space-size=4 --import tsx bench/instructions.ts --tree . --scenario activate --count $n; done
 *
 * Scenarios: validate, refresh, activate (public API), server-validate (API key, License-Key header), create, create-keyed.
 *
 * The tree's own services are used, with whichever signatures it has (before issue 8, services
 * took an account id where they now take a principal).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';

const { values: flags } = parseArgs({
  options: {
    tree: { type: 'string', default: '.' },
    scenario: { type: 'string', default: 'validate' },
    count: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '25' },
    licenses: { type: 'string', default: '500' },
    /** info: the access log on, written as `npm start` writes it (to this process's stdout); off: warn. */
    log: { type: 'string', default: 'off' },
    /**
     * off, memory, or a Redis URL: where rate limits are counted (at a maximum never reached). With
     * Redis the count moves by ±25% between runs: how many keys share a call depends on when its
     * replies arrive.
     */
    limits: { type: 'string', default: 'off' },
  },
});
const tree = resolve(flags.tree);
const load = (path: string) => import(pathToFileURL(join(tree, 'dist', path)).href);

const { buildApp } = await load('app.js');
const { loadConfig } = await load('config.js');
const { createServices } = await load('services.js');
const { openStore } = await load('storage/index.js');
const principalModule = existsSync(join(tree, 'dist/core/principal.js')) ? await load('core/principal.js') : undefined;

const dataDir = mkdtempSync(join(tmpdir(), 'tessera-instr-'));
const limits =
  flags.limits === 'off' ? { RATE_LIMIT: 'off' } : { RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000', ...(flags.limits === 'memory' ? {} : { REDIS_URL: flags.limits, REDIS_KEY_PREFIX: `instr-${process.pid}:` }) };
const config = loadConfig({ DATA_DIR: dataDir, SECRET_KEY: '7e'.repeat(32), LOG_LEVEL: flags.log === 'off' ? 'warn' : flags.log, ...limits });
const store = await openStore({ dataDir });
const services = createServices(store, config.secretKey);
try {
  const account = await services.accounts.create({ email: 'instr@example.com', password: 'instruction counting' });
  const who = principalModule ? principalModule.cliPrincipal(account.id) : account.id;
  const product = await services.products.create(who, { name: 'Counted' });
  // Created (and, below, activated) concurrently: group-committed, a few fsyncs in all.
  const create = () => services.licenses.create(who, { productId: product.id, type: 'perpetual', maxDevices: 1_000_000 });
  const keys: string[] = (await Promise.all(Array.from({ length: Number(flags.licenses) }, create))).map((l: { key: string }) => l.key);
  if (flags.scenario === 'refresh') await services.licenseTokens.updateConfig(who, product.id, { enabled: true });

  let logStream;
  if (flags.log !== 'off') {
    // As main.ts writes it (the tree's own choice: asynchronous if it has one), to /dev/null.
    const accessLog = existsSync(join(tree, 'dist/http/access-log.js')) ? await load('http/access-log.js') : undefined;
    const pino = (await import('pino')).default;
    if (accessLog?.asyncStdout) logStream = accessLog.asyncStdout(); // stdout: send it to /dev/null or a file
    else logStream = accessLog ? pino.destination({ dest: '/dev/null', sync: false, minLength: 8192 }) : pino.destination({ dest: '/dev/null', sync: true });
  }
  const app = await buildApp({ config, services, logger: flags.log !== 'off', logStream });
  await app.ready();

  let serial = 0;
  // create, create-keyed: license creation on the server API, without and with an Idempotency-Key.
  const creation = flags.scenario.startsWith('create');
  // server-validate: the server API's validate (Bearer API key, License-Key header).
  const serverValidate = flags.scenario === 'server-validate';
  const apiKey: string | undefined = creation || serverValidate ? (await services.apiKeys.create(who, 'instr')).secret : undefined;
  const path = { validate: 'validate', 'server-validate': 'validate', activate: 'activate', refresh: 'token', create: 'create', 'create-keyed': 'create' }[flags.scenario];
  if (!path) throw new Error(`unknown scenario ${flags.scenario}`);
  // validate and refresh ask about a device activated here first.
  if (flags.scenario === 'validate' || flags.scenario === 'refresh' || serverValidate) {
    const activate = (key: string) =>
      app.inject({ method: 'POST', url: '/api/v1/public/licenses/activate', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ licenseKey: key, productId: product.id, deviceIdentifier: 'd-0', deviceName: 'D' }) });
    await Promise.all(keys.map(activate));
  }
  const one = async () => {
    const i = serial++;
    const key = keys[i % keys.length];
    const device = flags.scenario === 'activate' ? `new-${i}` : 'd-0';
    // Keys spread like the random ones clients send (a UUID v4), yet the same in every run.
    const keyed = flags.scenario === 'create-keyed' ? { 'idempotency-key': createHash('sha256').update(String(i)).digest('hex').slice(0, 32) } : {};
    const res = await app.inject(
      creation
        ? {
            method: 'POST',
            url: '/api/v1/licenses',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, ...keyed },
            payload: `{"productId":"${product.id}","type":"perpetual","maxDevices":3}`,
          }
        : serverValidate
          ? {
              method: 'POST',
              url: '/api/v1/licenses/validate',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, 'license-key': key },
              payload: `{"deviceIdentifier":"${device}","productId":"${product.id}"}`,
            }
          : {
              method: 'POST',
              url: `/api/v1/public/licenses/${path}`,
              headers: { 'content-type': 'application/json' },
              payload: `{"licenseKey":"${key}","deviceIdentifier":"${device}","deviceName":"Bench","productId":"${product.id}"}`,
            },
    );
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${res.body}`);
  };
  const run = async (n: number) => {
    const width = Number(flags.concurrency);
    for (let done = 0; done < n; done += width) await Promise.all(Array.from({ length: Math.min(width, n - done) }, one));
  };
  await run(Number(flags.warmup));
  await run(Number(flags.count));
  await app.close();
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}

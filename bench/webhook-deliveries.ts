/**
 * Webhook deliveries per second to a loopback receiver (`npm run bench -- --webhook-deliveries N`):
 * N license creations, each a `license.created` delivery to one endpoint, are queued with no
 * worker running; then one outbox worker (the server's settings) sends them all and the time
 * from its start to the last delivery recorded as succeeded is measured. The receiver runs in a
 * child process on the load core, answering 204 over keep-alive connections; the worker runs in
 * this process. Server-side cost per delivery is this process's CPU time over the drain.
 */
import { spawn } from 'node:child_process';
import { loadConfig } from '../src/config.ts';
import { cliPrincipal } from '../src/core/principal.ts';
import { MAIL_JOB, mailConsumer } from '../src/modules/mail/queue.ts';
import { DEFAULT_WORKER_SETTINGS, OutboxWorker } from '../src/modules/outbox/worker.ts';
import { createServices } from '../src/services.ts';
import { openStore } from '../src/storage/index.ts';

export interface DeliveryResult {
  deliveries: number;
  seconds: number;
  perSecond: number;
  /** This process's CPU (worker, sender, store) per delivery. */
  cpuPerDeliveryUs: number;
}

const RECEIVER = `
const http = require('node:http');
let n = 0;
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => { n++; res.writeHead(204).end(); }); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write('port ' + server.address().port + '\\n'));
process.on('message', () => process.send(n));
`;

async function startReceiver(core: number | undefined) {
  const args = ['-e', RECEIVER];
  const child = core === undefined ? spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] }) : spawn('taskset', ['-c', String(core), process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => child.stdout!.on('data', (d: Buffer) => resolve(Number(/port (\d+)/.exec(String(d))![1]))));
  return { url: `http://127.0.0.1:${port}/hook`, stop: () => child.kill() };
}

export async function measureWebhookDeliveries(target: { dataDir: string; databaseUrl?: string }, count: number, receiverCore?: number): Promise<DeliveryResult> {
  const receiver = await startReceiver(receiverCore);
  const config = loadConfig({ DATA_DIR: target.dataDir, DATABASE_URL: target.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', SECRET_KEY: '7e'.repeat(32) });
  const store = await openStore({ dataDir: target.dataDir, databaseUrl: target.databaseUrl, poolSize: config.databasePoolSize });
  try {
    const services = createServices(store, config.secretKey, undefined, config);
    const account = await services.accounts.create({ email: `webhooks-${Date.now()}@bench.example`, password: 'bench password' });
    const principal = cliPrincipal(account.id);
    const product = await services.products.create(principal, { name: 'Webhook bench' });
    await services.webhooks.create(principal, { url: receiver.url, events: ['license.created'] });
    // Queued in units of 100 changes: the setup is not what is measured.
    for (let done = 0; done < count; done += 100) {
      await services.units.run(async (unit) => {
        for (let i = done; i < Math.min(count, done + 100); i++) await services.licenses.create(principal, { productId: product.id, type: 'perpetual', maxDevices: 1 }, unit);
      });
    }
    const quiet = { info() {}, warn() {}, error() {} };
    const consumers = { ...services.jobConsumers, [MAIL_JOB]: mailConsumer({ description: 'none', send: async () => {}, close() {} }) };
    const worker = new OutboxWorker(services.outbox, consumers, quiet, { ...DEFAULT_WORKER_SETTINGS, concurrency: config.outboxConcurrency });
    const cpu = process.cpuUsage();
    const started = performance.now();
    await worker.drain();
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const succeeded = await store.read.first(
      store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'succeeded'),
    );
    const deliveries = Number(succeeded!.n);
    if (deliveries !== count) throw new Error(`webhook bench: ${deliveries} of ${count} deliveries succeeded`);
    await worker.stop();
    return { deliveries, seconds, perSecond: deliveries / seconds, cpuPerDeliveryUs: (used.user + used.system) / deliveries };
  } finally {
    await store.close();
    receiver.stop();
  }
}

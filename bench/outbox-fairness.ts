/**
 * Outbox fairness (issue 33, item 3): how long one tenant's purchase e-mail and webhook wait while
 * another tenant floods the outbox. `node --import tsx bench/outbox-fairness.ts [--tree DIR]
 * [--database-url URL] [--activations N]`.
 *
 * A real server process of the tree (`DIR/src/main.ts`, default this checkout) runs with its default
 * settings (64 outbox slots, a 10 s answer timeout per webhook attempt), e-mail written as `.eml`
 * files. The flooder has 20 endpoints at a receiver that takes every request and never answers, and
 * activates N devices (default 60: N × 20 deliveries). Once the receiver holds 16 attempts,
 * the other tenant creates a license with its purchase e-mail and has one endpoint at a receiver that
 * answers at once. Printed: the milliseconds from that creation to its `.eml` file and to its
 * `license.created` delivery (capped at 300 s).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { withTarget } from './target.ts';

const { values: flags } = parseArgs({ options: { tree: { type: 'string' }, 'database-url': { type: 'string' }, activations: { type: 'string' } } });
const tree = resolve(flags.tree ?? '.');
const activations = Number(flags.activations ?? 60);
const CAP_MS = 300_000;
const SECRET = 'b'.repeat(64);

/** A receiver: `hang` takes every request and never answers; otherwise 204 at once. Records bodies. */
async function receiver(hang: boolean) {
  const bodies: { at: number; json: any }[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ at: Date.now(), json: JSON.parse(Buffer.concat(chunks).toString()) });
      if (hang) held.push(res);
      else res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, bodies, close: () => (held.forEach((r) => r.socket?.destroy()), server.closeAllConnections(), server.close()) };
}

function run(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: tree, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolvePromise(out) : reject(new Error(`${args.join(' ')}: ${code}\n${out}`))));
  });
}

async function startServer(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: tree, env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const url = await new Promise<string>((resolvePromise, reject) => {
    const poll = setInterval(() => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match) {
        clearInterval(poll);
        resolvePromise(match[1]!);
      }
    }, 20);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return { url, stop: () => child.kill('SIGKILL') };
}

async function post(url: string, body: unknown, auth: string) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${auth}` }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function main(): Promise<void> {
  await withTarget(flags['database-url'], async ({ dataDir, databaseUrl }) => {
    const env = { DATA_DIR: dataDir, DATABASE_URL: databaseUrl ?? '', SECRET_KEY: SECRET, RATE_LIMIT: 'off', WEBHOOK_ALLOW_PRIVATE: 'true', SMTP_URL: '' };
    const hung = await receiver(true);
    const good = await receiver(false);
    const server = await startServer(env);
    try {
      const key = async (email: string) => {
        await run(['src/cli.ts', 'account', 'create', '--email', email, '--password', 'long enough password'], env);
        return JSON.parse(await run(['src/cli.ts', 'api-key', 'create', '--email', email], env)).apiKey as string;
      };
      const flooder = await key('flooder@bench.example');
      for (let i = 0; i < 20; i++) await post(`${server.url}/api/v1/webhooks`, { url: `${hung.url}?endpoint=${i}`, events: ['*'] }, flooder);
      const product = await post(`${server.url}/api/v1/products`, { name: 'Flood' }, flooder);
      const license = await post(`${server.url}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 100000 }, flooder);
      for (let i = 0; i < activations; i++) {
        await post(`${server.url}/api/v1/public/licenses/activate`, { licenseKey: license.key, productId: product.id, deviceIdentifier: `flood-${i}`, deviceName: 'Flood' }, '');
      }
      console.error(`flood queued: ${activations * 20} deliveries`);
      while (hung.bodies.length < 16) await new Promise((r) => setTimeout(r, 10));
      console.error(`the hung receiver holds ${hung.bodies.length} attempts`);

      const other = await key('other@bench.example');
      await post(`${server.url}/api/v1/webhooks`, { url: good.url, events: ['license.created'] }, other);
      const otherProduct = await post(`${server.url}/api/v1/products`, { name: 'Other' }, other);
      const started = Date.now();
      const created = await post(`${server.url}/api/v1/licenses`, { productId: otherProduct.id, type: 'perpetual', maxDevices: 1, email: 'buyer@bench.example', sendEmail: true }, other);
      const outbox = join(dataDir, 'outbox');
      let mailMs: number | undefined;
      let webhookMs: number | undefined;
      while ((mailMs === undefined || webhookMs === undefined) && Date.now() - started < CAP_MS) {
        if (mailMs === undefined && existsSync(outbox) && readdirSync(outbox).some((f) => f.endsWith('.eml') && readFileSync(join(outbox, f), 'utf8').includes('buyer@bench.example'))) {
          mailMs = Date.now() - started;
        }
        const hook = good.bodies.find((b) => b.json.data?.license?.key === created.key);
        if (webhookMs === undefined && hook) webhookMs = hook.at - started;
        await new Promise((r) => setTimeout(r, 20));
      }
      console.log(
        JSON.stringify({
          tree,
          store: databaseUrl ? 'postgres' : 'sqlite',
          floodDeliveries: activations * 20,
          hungAttemptsSeen: hung.bodies.length,
          purchaseMailMs: mailMs ?? `> ${CAP_MS}`,
          webhookMs: webhookMs ?? `> ${CAP_MS}`,
        }),
      );
    } finally {
      server.stop();
      hung.close();
      good.close();
      // The killed server's connections go before its database is dropped.
      await new Promise((r) => setTimeout(r, 500));
    }
  });
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

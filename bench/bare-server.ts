import Fastify from 'fastify';

/**
 * The baseline: a bare Fastify endpoint (logger off, no schemas, no hooks) that takes the same
 * request as the public scenarios (a POST with a JSON body, parsed) and answers a fixed
 * license-shaped JSON of the size public validate answers. Run by the benchmark as a child
 * process, pinned like the server. With `DATA_DIR` (a seeded SQLite store) it also serves the
 * reference routes of bench/reference-routes.ts, loaded only then so the bare baseline stays bare.
 */
const app = Fastify({ logger: false });
const at = new Date().toISOString();
const answer = {
  isValid: true,
  status: 'active',
  device: { identifier: 'bench-device-1', name: 'Bench device', activationDate: at },
  license: { key: 'K7QPM-2XHDA-9RTWC-B4NZE-6FJUV', productId: 'p_0123456789abcdefghij', type: 'perpetual', revoked: false, maxDevices: 100000, expiresAt: null, createdAt: at },
};
app.post('/bare', async (req) => {
  // Read what was sent, as any handler would: the parse is part of the cost compared.
  if (typeof (req.body as { licenseKey?: unknown } | undefined)?.licenseKey !== 'string') throw new Error('no licenseKey in the body');
  return answer;
});
app.get('/ready', async () => ({ ok: true }));
if (process.env.DATA_DIR) (await import('./reference-routes.ts')).addReferenceRoutes(app, process.env.DATA_DIR);

const port = Number(process.env.PORT || 3999);
await app.listen({ port, host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));

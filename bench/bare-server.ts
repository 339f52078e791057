import Fastify from 'fastify';

/**
 * The baseline: a bare Fastify endpoint answering a fixed JSON body, with the same logger
 * setting as the service. Run by the benchmark as a child process, pinned like the server.
 * With `DATA_DIR` (a seeded SQLite store) it also serves the reference routes of
 * bench/reference-routes.ts, loaded only then so the bare baseline stays bare.
 */
const app = Fastify({ logger: { level: process.env.LOG_LEVEL || 'warn' } });
const body = { isValid: true, status: 'active' };
app.get('/bare', async () => body);
if (process.env.DATA_DIR) (await import('./reference-routes.ts')).addReferenceRoutes(app, process.env.DATA_DIR);

const port = Number(process.env.PORT || 3999);
await app.listen({ port, host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));

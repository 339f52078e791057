import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/stores.ts';
import { type ServerProcess, startServer } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

const OPEN_FILES = 1024;
const IDLE_SOCKETS = 3000;

/** Issue 14, item 1: silent connections past the open-files limit, and a body dribbled byte by byte. */
describe('idle and slow connections', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let port = 0;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    server = await startServer(
      { ...database.env, HTTP_HEADERS_TIMEOUT_MS: '1500', HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_CONNECTION_TIMEOUT_MS: '3000' },
      { maxOpenFiles: OPEN_FILES },
    );
    port = Number(new URL(server.url).port);
  }, 60_000);

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await server?.stop();
    await database?.drop();
  });

  const healthz = async () => {
    try {
      return (await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(1000) })).status;
    } catch {
      return 0;
    }
  };

  it(`keeps /healthz answering while ${IDLE_SOCKETS} silent connections (more than its ${OPEN_FILES} descriptors) are open`, async () => {
    // They arrive while the server is stalled (as in a long GC pause or a busy CI machine), so they
    // all wait in the kernel's accept queue: past Node's default backlog the kernel would drop their
    // handshakes and leave these clients on connections the server never sees or closes.
    server.child.kill('SIGSTOP');
    try {
      for (let i = 0; i < IDLE_SOCKETS; i++) {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => {});
        s.resume(); // read, so that the server's FIN is seen
        sockets.push(s);
      }
      await waitFor(() => sockets.every((s) => !s.connecting || s.destroyed), { timeoutMs: 20_000, message: 'every socket connected' });
    } finally {
      server.child.kill('SIGCONT');
    }
    // They are all still open from this side: the server is the one that must let go of them.
    await waitFor(async () => (await healthz()) === 200, { timeoutMs: 15_000, intervalMs: 200, message: '/healthz answering' });
    await waitFor(() => sockets.every((s) => s.destroyed), { timeoutMs: 15_000, intervalMs: 200, message: 'idle sockets closed by the server' });
    expect(server.output()).toContain('connection limit reached');
    expect(await healthz()).toBe(200);
  }, 60_000);

  it('closes a request whose body is dribbled a byte at a time, answering 408 in the error model', async () => {
    const s = connect(port, '127.0.0.1');
    let answer = '';
    s.on('data', (d) => (answer += d));
    s.on('error', () => {});
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
    s.write('POST /api/v1/public/licenses/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n');
    const dribble = setInterval(() => s.writable && s.write(' '), 250);
    const started = Date.now();
    await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('still open after 10 s')), 10_000))]).finally(() => clearInterval(dribble));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"code":"request_timeout"');
  }, 20_000);
});

/**
 * Issue 33, item 11: a socket that never sends a byte is closed by the headers timeout too (Node's
 * connection sweep times a connection from its creation, not from its first byte). A client that
 * does not read its socket never sees that close, and the server's side then lingers in FIN-WAIT-2
 * (no descriptor) for the kernel's tcp_fin_timeout: what a probe that did not read saw as open.
 */
describe('a connection that never sends a byte', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let port = 0;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    // The connection (socket inactivity) timeout stays at its default, 70 s: only the headers timeout can close it in time.
    server = await startServer({ ...database.env, HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '5000' });
    port = Number(new URL(server.url).port);
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  const open = () => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.resume();
    const closed = new Promise<number>((resolve) => s.on('close', () => resolve(Date.now())));
    return { s, closed, opened: Date.now() };
  };
  const within = (p: Promise<number>, ms: number) => Promise.race([p, new Promise<number>((resolve) => setTimeout(() => resolve(-1), ms))]);

  it('is closed within HTTP_HEADERS_TIMEOUT_MS (swept every second), while a kept-alive one that sent a request stays for its keep-alive timeout', async () => {
    const silent = open();
    const busy = open();
    busy.s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const silentClosedAt = await within(silent.closed, 6000);
    expect(silentClosedAt, 'the silent connection was still open after 6 s').toBeGreaterThan(0);
    expect(silentClosedAt - silent.opened).toBeGreaterThanOrEqual(900);
    expect(silentClosedAt - silent.opened).toBeLessThan(2600);
    // The one that sent a request is idle now too, but keep-alive (5 s) governs it, not the headers timeout.
    expect(busy.s.destroyed).toBe(false);
    expect(await within(busy.closed, 6000)).toBeGreaterThan(0);
  }, 30_000);
});

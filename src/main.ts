import { buildApp } from './app.ts';
import { loadConfig } from './config.ts';
import { bufferedStdout } from './http/access-log.ts';
import { createServices } from './services.ts';
import { lockDataDir, secureDataDir } from './storage/data-dir.ts';
import { openStore } from './storage/index.ts';

const SHUTDOWN_DEADLINE_MS = 10_000;

// Log lines are buffered and written asynchronously (at least every second); every exit path
// below writes what is left first.
const logs = bufferedStdout();
const exit = (code: number): never => {
  logs.flushSync();
  process.exit(code);
};

const LISTEN_BACKLOG = 4096;

/** `npm start`: opens the store (running migrations), serves, and shuts down gracefully. */
async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything opens the database or starts a worker: private files, and one server per DATA_DIR
  // (SQLite only: processes sharing PostgreSQL are meant to run side by side).
  secureDataDir(config.dataDir);
  const lock = config.databaseUrl ? undefined : lockDataDir(config.dataDir);
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize, sqliteMmapBytes: config.sqliteMmapBytes });
  let log: { error: (o: object, m: string) => void } = console;
  const services = createServices(store, config.secretKey, (err) => log.error({ err }, 'background write failed'), config);
  const app = await buildApp({ config, services, logStream: logs });
  log = app.log;
  if (lock) {
    // Holding the DATA_DIR lock, this is the only process: whatever is claimed was claimed by one that died.
    const released = await services.outbox.releaseClaims();
    if (released > 0) app.log.info({ released }, 'outbox: released the claims of a process that is gone; those jobs run now');
  }
  if (config.trustProxy === true) {
    app.log.warn('TRUST_PROXY=true believes every X-Forwarded-For hop, so a client can choose its address (and dodge rate limits). Set TRUST_PROXY=1 (one proxy) or the proxy addresses instead; see docs/security.md.');
  }
  process.on('uncaughtException', (err) => {
    app.log.fatal({ err }, 'uncaught exception: exiting');
    exit(1);
  });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    try {
      // close() stops accepting and waits for in-flight requests. Keep-alive connections that
      // go idle after it started would hold it open, so sweep them until it is done; past the
      // deadline, cut whatever is left.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => app.server.closeAllConnections(), SHUTDOWN_DEADLINE_MS);
      await app.close();
      clearInterval(sweep);
      clearTimeout(deadline);
      await store.close();
      lock?.release();
      app.log.info('shut down cleanly');
      exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      exit(1);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  // Node's default backlog (511) overflows under a burst of connections while the loop is busy, and
  // the kernel then drops the handshake's last ACK: the client believes it is connected to a server
  // that never saw it, and waits forever. The kernel caps this at net.core.somaxconn.
  await app.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG });
  app.log.info({ store: store.dialect, dataDir: store.dialect === 'sqlite' ? config.dataDir : undefined, baseUrl: config.baseUrl }, 'Tessera is serving');
  if ((await services.accounts.count()) === 0) {
    app.log.warn(
      `No account yet. Open ${config.baseUrl}/dashboard to create the first one, or from the command line, then an API key:\n` +
        "  npm run --silent cli -- account create --email you@example.com --password 'a long password'\n" +
        '  npm run --silent cli -- api-key create --email you@example.com',
    );
  }
  // The start-up lines now, not at the first periodic flush (a supervisor may wait for them).
  logs.flush();
}

main().catch((err) => {
  console.error(err);
  exit(1);
});

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';

export interface RateLimitConfig {
  enabled: boolean;
  /** Requests per minute per client address on each public endpoint. */
  publicPerMinute: number;
  /** Trials started per hour per client address (POST /public/trials). */
  trialsPerClientPerHour: number;
  /** Requests per minute per account on the server API. */
  serverPerMinute: number;
  /** Portal access-link requests per hour per e-mail address and client address (counted in the database). */
  portalLinksPerAddressPerHour: number;
  /** Portal access-link requests per hour per e-mail address from all clients together (a high cap). */
  portalLinksAllClientsPerAddressPerHour: number;
  /** Portal access-link requests per hour per client address. */
  portalLinksPerClientPerHour: number;
  /** REDIS_URL: counters in Redis, shared by every process; in memory when unset. */
  redisUrl?: string;
  /** Prefix of the counters' Redis keys (REDIS_KEY_PREFIX). */
  redisKeyPrefix: string;
  /** Dashboard log-in (and password-reset) attempts per 15 minutes per e-mail address and client address. */
  dashboardLoginsPerAddress: number;
  /** Dashboard log-in (and password-reset) attempts per 15 minutes per e-mail address from all clients together (a high cap). */
  dashboardLoginsAllClientsPerAddress: number;
  /** Dashboard log-in (and password-reset) attempts per 15 minutes per client address. */
  dashboardLoginsPerClient: number;
  /** Dashboard page requests per minute per client address. */
  dashboardPerMinute: number;
}

/**
 * How long a connection may take over each part of its life (milliseconds; 0 turns one off).
 * Idle and slow clients otherwise hold a socket, and a file descriptor, forever.
 */
export interface HttpLimits {
  /** Complete request headers within this time of connecting (or of the previous response). */
  headersTimeoutMs: number;
  /** Complete request, body included, within this time (a body dribbled a byte at a time ends here). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection closes after this; keep it above a pooling proxy's idle timeout. */
  keepAliveTimeoutMs: number;
  /** A socket with no traffic either way for this long is closed (slow readers). */
  connectionTimeoutMs: number;
  /** Open connections at most; more are closed as they arrive (0: no cap). */
  maxConnections: number;
}

export interface WebhookConfig {
  /** WEBHOOK_ALLOW_PRIVATE=true: endpoints may resolve to private, loopback or link-local addresses. */
  allowPrivate: boolean;
  connectTimeoutMs: number;
  /** The whole answer must arrive within this (a longer wait is a failed attempt). */
  timeoutMs: number;
  /** Open connections per receiver host. */
  maxSockets: number;
  /** Deliveries and their attempts are kept this long (days). */
  retentionDays: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  databasePoolSize: number;
  /** PostgreSQL: validation rows kept in memory per process (VALIDATION_CACHE_ENTRIES; 0 turns the cache off). */
  validationCacheEntries: number;
  /** SQLite: bytes of the database file read through a memory map (SQLITE_MMAP_MB). */
  sqliteMmapBytes: number;
  baseUrl: string;
  /** 32 bytes: the root secret for encrypting secrets at rest. */
  secretKey: Buffer;
  smtpUrl?: string;
  mailFrom: string;
  /**
   * Without SMTP, each e-mail's links also go to the log (a new user's sign-in and reset links at
   * hand): on unless NODE_ENV is production, since the links open accounts and portals.
   */
  logMailLinks: boolean;
  logLevel: string;
  /** Requests slower than this (ms) are logged in full at warn. */
  logSlowMs: number;
  /** Share (0..1) of successful public-API requests that get an access line. */
  logSamplePublic: number;
  /**
   * Which proxies' X-Forwarded-For is believed (Fastify's trustProxy): false (none), a number of
   * hops, or the proxies' addresses/CIDRs. `true` (every hop) lets a client choose its address.
   */
  trustProxy: boolean | number | string[];
  http: HttpLimits;
  rateLimit: RateLimitConfig;
  /** Where the stripe package sends its calls (STRIPE_API_URL; Stripe's own address when unset). */
  stripeApiUrl?: string;
  /** STRIPE_CLI_WEBHOOK_SECRET: for local testing with `stripe listen` (test-mode connections only). */
  stripeCliWebhookSecret?: string;
  /** Where the Lemon Squeezy package's calls go (LEMONSQUEEZY_API_URL; Lemon Squeezy's own address when unset). */
  lemonSqueezyApiUrl?: string;
  /** Where @polar-sh/sdk sends its calls (POLAR_API_URL; Polar's production or sandbox server, by connection, when unset). */
  polarApiUrl?: string;
  webhooks: WebhookConfig;
  /** Audit log entries are kept this long (days). */
  auditRetentionDays: number;
  /** Outbox jobs in hand at once per process and lane (e-mail has its own lane; webhook deliveries and event consumers share the other). */
  outboxConcurrency: number;
  /** Outbox jobs in flight at once per account and per webhook endpoint, across all processes (OUTBOX_CONCURRENCY_PER_ACCOUNT, WEBHOOK_CONCURRENCY_PER_ENDPOINT). */
  outboxCaps: { perAccount: number; perTarget: number };
  /** When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`. */
  metricsToken?: string;
  /** `open`: anyone may create a dashboard account at /dashboard/signup; `closed` (default): the first-run setup and the CLI only. */
  signup: 'open' | 'closed';
}

type Env = Record<string, string | undefined>;

function fraction(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new Error(`${name} must be a number from 0 to 1, got "${raw}"`);
  return value;
}

function int(env: Env, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

/** Descriptors kept for the database, its WAL, mail files and logs when connections are capped. */
const RESERVED_FILES = 256;

/** The soft open-files limit (Linux: /proc/self/limits), or undefined where it cannot be read. */
function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * MAX_CONNECTIONS: by default the open-files limit less a reserve, so a flood of connections can
 * never take the descriptors the database and the mail outbox need; 0 turns the cap off.
 */
function maxConnections(env: Env): number {
  const limit = openFilesLimit();
  const fallback = limit === undefined ? 0 : Math.max(64, limit - RESERVED_FILES);
  return int(env, 'MAX_CONNECTIONS', fallback, 0);
}

/**
 * TRUST_PROXY: unset/`false` (connect directly), a number of proxy hops in front (`1` behind one
 * reverse proxy), or a comma-separated list of the proxies' addresses or CIDRs. `true` trusts
 * every hop and is kept for compatibility only (main.ts warns): the client then picks its address.
 */
export function parseTrustProxy(raw: string | undefined): boolean | number | string[] {
  const value = (raw ?? '').trim();
  if (value === '' || value.toLowerCase() === 'false') return false;
  if (value.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const [address, bits, ...rest] = entry.split('/');
    const version = isIP(address ?? '');
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (version === 6 ? 128 : 32));
    if (!version || !bitsOk || rest.length > 0) {
      throw new Error(`TRUST_PROXY must be false, a number of proxy hops, or a comma-separated list of proxy addresses/CIDRs; "${entry}" is none`);
    }
  }
  return entries;
}

/**
 * SECRET_KEY (64 hex characters) when set; otherwise one generated on first start into
 * DATA_DIR/secret.key (mode 0600). Processes sharing PostgreSQL must all be given the same one.
 */
function secretKey(env: Env, dataDir: string): Buffer {
  const fromEnv = env.SECRET_KEY?.trim();
  const file = join(dataDir, 'secret.key');
  let hex = fromEnv;
  if (!hex && existsSync(file)) hex = readFileSync(file, 'utf8').trim();
  if (!hex) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    hex = randomBytes(32).toString('hex');
    writeFileSync(file, `${hex}\n`, { mode: 0o600, flag: 'wx' });
  }
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error('SECRET_KEY must be 64 hexadecimal characters (32 bytes)');
  return Buffer.from(hex, 'hex');
}

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 3000, 0);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new Error('DATABASE_URL must be a postgres:// URL');
  const smtpUrl = env.SMTP_URL || undefined;
  if (smtpUrl && !/^smtps?:\/\/[^/?#]/.test(smtpUrl)) throw new Error('SMTP_URL must be an smtp:// or smtps:// URL');
  const stripeApiUrl = env.STRIPE_API_URL || undefined;
  if (stripeApiUrl && !/^https?:\/\/[^/?#]+\/?$/.test(stripeApiUrl)) throw new Error('STRIPE_API_URL must be an http(s) origin, e.g. https://api.stripe.com');
  const lemonSqueezyApiUrl = env.LEMONSQUEEZY_API_URL || undefined;
  if (lemonSqueezyApiUrl && !/^https?:\/\/[^/?#]+\/?$/.test(lemonSqueezyApiUrl)) throw new Error('LEMONSQUEEZY_API_URL must be an http(s) origin, e.g. https://api.lemonsqueezy.com');
  const polarApiUrl = env.POLAR_API_URL || undefined;
  if (polarApiUrl && !/^https?:\/\/[^/?#]+\/?$/.test(polarApiUrl)) throw new Error('POLAR_API_URL must be an http(s) origin, e.g. https://api.polar.sh');
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new Error('REDIS_URL must be a redis:// or rediss:// URL');
  const rateLimitOff = (env.RATE_LIMIT ?? '').toLowerCase() === 'off';
  const signup = (env.SIGNUP || 'closed').toLowerCase();
  if (signup !== 'open' && signup !== 'closed') throw new Error(`SIGNUP must be "open" or "closed", got "${env.SIGNUP}"`);
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10),
    validationCacheEntries: int(env, 'VALIDATION_CACHE_ENTRIES', 100_000, 0),
    sqliteMmapBytes: int(env, 'SQLITE_MMAP_MB', 1024, 0) * 1024 * 1024,
    baseUrl: (env.BASE_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`).replace(/\/+$/, ''),
    secretKey: secretKey(env, dataDir),
    smtpUrl,
    mailFrom: env.MAIL_FROM || 'Tessera <no-reply@localhost>',
    logMailLinks: !smtpUrl && env.NODE_ENV !== 'production',
    logLevel: env.LOG_LEVEL || 'info',
    logSlowMs: int(env, 'LOG_SLOW_MS', 1000, 0),
    logSamplePublic: fraction(env, 'LOG_SAMPLE_PUBLIC', 1),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    http: {
      headersTimeoutMs: int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 0),
      requestTimeoutMs: int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 0),
      keepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 1),
      connectionTimeoutMs: int(env, 'HTTP_CONNECTION_TIMEOUT_MS', 70_000, 0),
      maxConnections: maxConnections(env),
    },
    stripeApiUrl,
    stripeCliWebhookSecret: env.STRIPE_CLI_WEBHOOK_SECRET || undefined,
    lemonSqueezyApiUrl,
    polarApiUrl,
    rateLimit: {
      enabled: !rateLimitOff,
      publicPerMinute: int(env, 'RATE_LIMIT_PUBLIC_PER_MINUTE', 600),
      serverPerMinute: int(env, 'RATE_LIMIT_SERVER_PER_MINUTE', 6000),
      trialsPerClientPerHour: int(env, 'RATE_LIMIT_TRIALS_PER_CLIENT_PER_HOUR', 10),
      portalLinksPerAddressPerHour: int(env, 'RATE_LIMIT_PORTAL_LINKS_PER_ADDRESS_PER_HOUR', 5),
      portalLinksAllClientsPerAddressPerHour: int(env, 'RATE_LIMIT_PORTAL_LINKS_ALL_CLIENTS_PER_ADDRESS_PER_HOUR', 50),
      portalLinksPerClientPerHour: int(env, 'RATE_LIMIT_PORTAL_LINKS_PER_CLIENT_PER_HOUR', 20),
      redisUrl,
      redisKeyPrefix: env.REDIS_KEY_PREFIX || 'tessera:rl:',
      dashboardLoginsPerAddress: int(env, 'RATE_LIMIT_DASHBOARD_LOGINS_PER_ADDRESS', 10),
      dashboardLoginsAllClientsPerAddress: int(env, 'RATE_LIMIT_DASHBOARD_LOGINS_ALL_CLIENTS_PER_ADDRESS', 100),
      dashboardLoginsPerClient: int(env, 'RATE_LIMIT_DASHBOARD_LOGINS_PER_CLIENT', 30),
      dashboardPerMinute: int(env, 'RATE_LIMIT_DASHBOARD_PER_MINUTE', 600),
    },
    webhooks: {
      allowPrivate: (env.WEBHOOK_ALLOW_PRIVATE ?? '').toLowerCase() === 'true',
      connectTimeoutMs: int(env, 'WEBHOOK_CONNECT_TIMEOUT_MS', 5000),
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
      maxSockets: int(env, 'WEBHOOK_MAX_SOCKETS', 32),
      retentionDays: int(env, 'WEBHOOK_DELIVERY_RETENTION_DAYS', 30),
    },
    auditRetentionDays: int(env, 'AUDIT_RETENTION_DAYS', 365),
    outboxConcurrency: int(env, 'OUTBOX_CONCURRENCY', 64),
    outboxCaps: { perAccount: int(env, 'OUTBOX_CONCURRENCY_PER_ACCOUNT', 32), perTarget: int(env, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT', 16) },
    metricsToken: env.METRICS_TOKEN || undefined,
    signup,
  };
}

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface RateLimitConfig {
  enabled: boolean;
  /** Requests per minute per client address on each public endpoint. */
  publicPerMinute: number;
  /** Requests per minute per account on the server API. */
  serverPerMinute: number;
  /** Portal access-link requests per hour per e-mail address (counted in the database). */
  portalLinksPerAddressPerHour: number;
  /** Portal access-link requests per hour per client address. */
  portalLinksPerClientPerHour: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  databasePoolSize: number;
  /** SQLite: bytes of the database file read through a memory map (SQLITE_MMAP_MB). */
  sqliteMmapBytes: number;
  baseUrl: string;
  /** 32 bytes: the root secret for encrypting secrets at rest. */
  secretKey: Buffer;
  smtpUrl?: string;
  mailFrom: string;
  logLevel: string;
  /** Requests slower than this (ms) are logged in full at warn. */
  logSlowMs: number;
  /** Share (0..1) of successful public-API requests that get an access line. */
  logSamplePublic: number;
  trustProxy: boolean;
  rateLimit: RateLimitConfig;
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
    mkdirSync(dataDir, { recursive: true });
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
  const rateLimitOff = (env.RATE_LIMIT ?? '').toLowerCase() === 'off';
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10),
    sqliteMmapBytes: int(env, 'SQLITE_MMAP_MB', 1024, 0) * 1024 * 1024,
    baseUrl: (env.BASE_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`).replace(/\/+$/, ''),
    secretKey: secretKey(env, dataDir),
    smtpUrl,
    mailFrom: env.MAIL_FROM || 'Tessera <no-reply@localhost>',
    logLevel: env.LOG_LEVEL || 'info',
    logSlowMs: int(env, 'LOG_SLOW_MS', 1000, 0),
    logSamplePublic: fraction(env, 'LOG_SAMPLE_PUBLIC', 1),
    trustProxy: (env.TRUST_PROXY ?? '').toLowerCase() === 'true',
    rateLimit: {
      enabled: !rateLimitOff,
      publicPerMinute: int(env, 'RATE_LIMIT_PUBLIC_PER_MINUTE', 600),
      serverPerMinute: int(env, 'RATE_LIMIT_SERVER_PER_MINUTE', 6000),
      portalLinksPerAddressPerHour: int(env, 'RATE_LIMIT_PORTAL_LINKS_PER_ADDRESS_PER_HOUR', 5),
      portalLinksPerClientPerHour: int(env, 'RATE_LIMIT_PORTAL_LINKS_PER_CLIENT_PER_HOUR', 20),
    },
  };
}

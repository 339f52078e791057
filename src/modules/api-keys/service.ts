import { createHash, timingSafeEqual } from 'node:crypto';
import { type Scope, SCOPES } from '../../core/access.ts';
import { AppError, invalidRequest } from '../../core/errors.ts';
import { newApiKeyId, randomBase62 } from '../../core/ids.ts';
import { apiKeyPrincipal, type Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';

export interface ApiKey {
  id: string;
  accountId: string;
  name: string;
  keyHash: string;
  keyPrefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  /** How far the key reaches (core/access.ts). */
  scope: Scope;
  /** Refused from this instant on; null: never. */
  expiresAt: number | null;
}

/** A new key's limits: `scope` is checked here (a form or the command line passes what it was given). */
export interface ApiKeyLimits {
  scope?: string;
  expiresAt?: number | null;
}

export interface ApiKeyRepository {
  insert(unit: Unit, key: ApiKey): Promise<void>;
  findByHash(hash: string): Promise<ApiKey | undefined>;
  listByAccount(accountId: string): Promise<ApiKey[]>;
  revoke(unit: Unit, accountId: string, id: string, at: number): Promise<number>;
  touch(unit: Unit, id: string, at: number): Promise<void>;
}

const KEY_PATTERN = /^sk_[A-Za-z0-9]{32,128}$/;
const SECRET_LENGTH = 40;
/** last_used_at is written at most this often per key and process: a write per request would cost the hot path. */
const TOUCH_INTERVAL_MS = 60_000;

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** API keys: `sk_` + 40 base62 characters, shown once, stored only as a SHA-256 hash. */
export class ApiKeyService {
  private readonly lastTouched = new Map<string, number>();

  constructor(
    private readonly repo: ApiKeyRepository,
    private readonly units: UnitRunner,
    private readonly onBackgroundError: (error: unknown) => void = () => {},
    private readonly clock: () => number = Date.now,
  ) {}

  /** A new key, `full` and without expiry unless asked; an expiry must lie in the future. */
  async create(principal: Principal, name = 'default', { scope = 'full', expiresAt = null }: ApiKeyLimits = {}): Promise<{ key: ApiKey; secret: string }> {
    if (!SCOPES.includes(scope as Scope)) throw invalidRequest('scope', `must be one of ${SCOPES.join(', ')}`);
    const now = this.clock();
    if (expiresAt !== null && expiresAt <= now) throw invalidRequest('expiresAt', 'must be in the future');
    const secret = `sk_${randomBase62(SECRET_LENGTH)}`;
    const key: ApiKey = {
      id: newApiKeyId(),
      accountId: principal.accountId,
      name,
      keyHash: hashApiKey(secret),
      keyPrefix: secret.slice(0, 7),
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
      scope: scope as Scope,
      expiresAt,
    };
    await this.units.run((unit) => this.repo.insert(unit, key));
    return { key, secret };
  }

  list(principal: Principal): Promise<ApiKey[]> {
    return this.repo.listByAccount(principal.accountId);
  }

  async revoke(principal: Principal, id: string): Promise<void> {
    if ((await this.units.run((unit) => this.repo.revoke(unit, principal.accountId, id, this.clock()))) === 0) throw new AppError('not_found', 'API key not found.');
  }

  /** Resolves an `Authorization` header to its principal (account, key and scope); 401 when absent, 403 when wrong, revoked or expired. */
  async authenticate(header: string | undefined): Promise<Principal> {
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new AppError('missing_api_key', 'Missing API key: send "Authorization: Bearer <API key>".');
    const secret = match[1]!;
    if (!KEY_PATTERN.test(secret)) throw invalidKey();
    const hash = hashApiKey(secret);
    const key = await this.repo.findByHash(hash);
    // The lookup is by hash, so it leaks nothing about the secret; the compare is constant-time anyway.
    if (!key || key.revokedAt !== null || !timingSafeEqual(Buffer.from(key.keyHash), Buffer.from(hash))) throw invalidKey();
    if (key.expiresAt !== null && key.expiresAt <= this.clock()) throw new AppError('invalid_api_key', 'This API key has expired.');
    this.touch(key.id);
    return apiKeyPrincipal(key.accountId, key.id, key.scope);
  }

  private touch(id: string): void {
    const now = this.clock();
    if (now - (this.lastTouched.get(id) ?? 0) < TOUCH_INTERVAL_MS) return;
    this.lastTouched.set(id, now);
    this.units.run((unit) => this.repo.touch(unit, id, now)).catch(this.onBackgroundError);
  }
}

const invalidKey = () => new AppError('invalid_api_key', 'Invalid API key.');

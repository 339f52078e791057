import type { Executor } from '../../storage/store.ts';

/** A stored first answer, replayed byte for byte. */
export interface StoredResponse {
  status: number;
  contentType: string | null;
  body: string;
}

export type Claim =
  | { outcome: 'claimed' }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'in_use' }
  | { outcome: 'reused' };

export interface IdempotencyRepository {
  /** Inserts the claim; true when this call's insert won (a concurrent one does nothing). */
  insert(tx: Executor, row: { accountId: string; key: string; hash: string; lockedUntil: number; expiresAt: number }): Promise<boolean>;
  /** Takes over an expired key or a claim whose holder died (lease run out); true when it won. */
  takeOver(tx: Executor, row: { accountId: string; key: string; hash: string; lockedUntil: number; expiresAt: number }, now: number): Promise<boolean>;
  find(tx: Executor, accountId: string, key: string): Promise<{ hash: string; response: StoredResponse | null } | undefined>;
  complete(accountId: string, key: string, response: StoredResponse): Promise<void>;
  release(accountId: string, key: string): Promise<void>;
  purgeExpired(now: number, limit: number): Promise<number>;
}

export const KEY_LIFETIME_MS = 24 * 60 * 60_000;
/** A claim still in flight this long is taken to be from a process that died; a retry may run. */
export const CLAIM_LEASE_MS = 5 * 60_000;

/**
 * Idempotency-Key: the first request with a key claims it (an insert that wins once, however many
 * processes race), later ones with the same request replay its answer, with another request are
 * refused, and while it runs are told to wait. Keys are per account and live 24 hours.
 */
export const IDEMPOTENCY_PURGE_BATCH = 1000;

export class IdempotencyService {
  constructor(
    private readonly repo: IdempotencyRepository,
    private readonly write: <T>(work: (tx: Executor) => Promise<T>) => Promise<T>,
    private readonly clock: () => number,
  ) {}

  claim(accountId: string, key: string, hash: string): Promise<Claim> {
    const now = this.clock();
    const row = { accountId, key, hash, lockedUntil: now + CLAIM_LEASE_MS, expiresAt: now + KEY_LIFETIME_MS };
    return this.write(async (tx): Promise<Claim> => {
      if (await this.repo.insert(tx, row)) return { outcome: 'claimed' };
      if (await this.repo.takeOver(tx, row, now)) return { outcome: 'claimed' };
      const existing = await this.repo.find(tx, accountId, key);
      // Released between our insert and this read (its request failed): a retry may claim it.
      if (!existing) return { outcome: 'in_use' };
      if (existing.hash !== hash) return { outcome: 'reused' };
      return existing.response ? { outcome: 'replay', response: existing.response } : { outcome: 'in_use' };
    });
  }

  complete(accountId: string, key: string, response: StoredResponse): Promise<void> {
    return this.repo.complete(accountId, key, response);
  }

  /** Forgets a claim whose request failed on the server's side, so the client's retry runs. */
  release(accountId: string, key: string): Promise<void> {
    return this.repo.release(accountId, key);
  }

  /** Deletes up to `limit` expired keys; returns how many (the outbox worker's hourly housekeeping calls it). */
  purgeExpired(limit = IDEMPOTENCY_PURGE_BATCH): Promise<number> {
    return this.repo.purgeExpired(this.clock(), limit);
  }
}

import { randomBytes, randomFillSync, randomUUID } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Unbiased base62 from a CSPRNG (rejection sampling over bytes < 248). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const newAccountId = (): string => randomUUID();
export const newProductId = (): string => `p_${randomBase62(20)}`;
export const newApiKeyId = (): string => `key_${randomBase62(16)}`;
export const newMemberId = (): string => `mem_${randomBase62(16)}`;
export const newInvitationId = (): string => `inv_${randomBase62(16)}`;

const pool = Buffer.alloc(4096);
let poolUsed = pool.length;

/**
 * Random base62 for identifiers made on every change (an audit entry's, a webhook event's), drawn
 * from the CSPRNG 4 KiB at a time: a `randomBytes` call per id cost more than the rest of the id.
 * Not for secrets or keys (`randomBase62`): their bytes should not wait in memory before use.
 */
export function idBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    if (poolUsed === pool.length) {
      randomFillSync(pool);
      poolUsed = 0;
    }
    const byte = pool[poolUsed++]!;
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

let sequence = 0;
/**
 * An id that sorts as it was made: the time (`at`, epoch ms, base 36), a per-process sequence,
 * then randomness. Tables keyed by it are clustered in time order, so "newest first" pages and
 * "older than" purges walk the primary key instead of extra indexes (each index is one more
 * B-tree to update on the hot path).
 */
export function timeOrderedId(at: number): string {
  sequence = (sequence + 1) % 36 ** 4;
  return `${Math.max(0, Math.floor(at)).toString(36).padStart(9, '0')}${sequence.toString(36).padStart(4, '0')}${idBase62(8)}`;
}

/** The time (epoch ms) a `timeOrderedId` was made at. */
export const timeOfOrderedId = (id: string): number => parseInt(id.slice(0, 9), 36);

/** The smallest id `timeOrderedId` can make at `at`: ids below it were made before. */
export const timeOrderedFloor = (at: number): string => Math.max(0, Math.floor(at)).toString(36).padStart(9, '0');

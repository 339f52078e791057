import { randomBytes, randomUUID } from 'node:crypto';

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

export const newUserId = (): string => randomUUID();
export const newProductId = (): string => `p_${randomBase62(20)}`;
export const newApiKeyId = (): string => `key_${randomBase62(16)}`;

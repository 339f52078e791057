import { randomBytes } from 'node:crypto';

/** Crockford-like alphabet without the look-alikes 0/O and 1/I (decisions.md). */
export const KEY_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const GROUPS = 5;
const GROUP_LENGTH = 5;
const KEY_PATTERN = new RegExp(`^[${KEY_ALPHABET}]{${GROUP_LENGTH}}(-[${KEY_ALPHABET}]{${GROUP_LENGTH}}){${GROUPS - 1}}$`);

/** 25 characters from a CSPRNG; 32 symbols divide 256 evenly, so `byte % 32` has no bias. */
export function generateLicenseKey(): string {
  const bytes = randomBytes(GROUPS * GROUP_LENGTH);
  let key = '';
  for (let i = 0; i < bytes.length; i++) {
    if (i > 0 && i % GROUP_LENGTH === 0) key += '-';
    key += KEY_ALPHABET[bytes[i]! % KEY_ALPHABET.length];
  }
  return key;
}

/** Input keys are trimmed and upper-cased before lookup. */
export function normalizeLicenseKey(input: string): string {
  return input.trim().toUpperCase();
}

export function isWellFormedLicenseKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

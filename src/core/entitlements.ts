import { invalidRequest } from './errors.ts';

/**
 * Entitlements: named features a license unlocks (decisions.md, "Licensing model"). A code is
 * lower-case letters, digits and `_.-`, 1 to 64 characters; a set holds at most 100. Sets keep the
 * order they were given in, without repeats.
 */
export const ENTITLEMENT_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,63}$';
export const ENTITLEMENTS_MAX = 100;

const CODE = new RegExp(ENTITLEMENT_PATTERN);

/** The set as given, repeats dropped; 400 naming `path` when a code or the count breaks the rule. */
export function checkEntitlements(codes: readonly string[], path: string): string[] {
  const set = [...new Set(codes)];
  const bad = set.findIndex((code) => !CODE.test(code));
  if (bad >= 0) throw invalidRequest(`${path}.${bad}`, `must match ${ENTITLEMENT_PATTERN}`);
  if (set.length > ENTITLEMENTS_MAX) throw invalidRequest(path, `must hold at most ${ENTITLEMENTS_MAX} entitlements`);
  return set;
}

/**
 * Stored as one text of codes joined by a space (a code holds none): the public validation reads a
 * license's set on every request, and a split costs less than JSON.parse.
 */
export const encodeEntitlements = (codes: readonly string[]): string => codes.join(' ');
export const decodeEntitlements = (text: string): string[] => (text === '' ? [] : text.split(' '));

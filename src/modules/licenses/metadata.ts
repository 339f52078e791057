import { invalidRequest } from '../../core/errors.ts';

/**
 * A license's metadata: the vendor's own key/value strings (decisions.md, Stripe's rule): at most 50
 * keys, a key at most 40 characters, a value at most 500. Shown in server views only, never in
 * public answers or tokens.
 */
export type Metadata = Record<string, string>;

export const METADATA_KEYS_MAX = 50;
export const METADATA_KEY_MAX = 40;
export const METADATA_VALUE_MAX = 500;

/** What a create or PATCH sends: a string sets a key, null removes it. */
export type MetadataChange = Record<string, string | null>;

/** `current` with `change` applied (null removes a key), checked against the limits. */
export function applyMetadata(current: Metadata, change: MetadataChange): Metadata {
  const next = Object.assign(Object.create(null) as Metadata, current);
  for (const [key, value] of Object.entries(change)) {
    if (key.length === 0 || key.length > METADATA_KEY_MAX) throw invalidRequest(`metadata.${key}`, `keys must be 1 to ${METADATA_KEY_MAX} characters`);
    if (value === null) delete next[key];
    else if (value.length > METADATA_VALUE_MAX) throw invalidRequest(`metadata.${key}`, `must be at most ${METADATA_VALUE_MAX} characters`);
    else next[key] = value;
  }
  if (Object.keys(next).length > METADATA_KEYS_MAX) throw invalidRequest('metadata', `must hold at most ${METADATA_KEYS_MAX} keys`);
  return next;
}

/** Stored as a JSON object; parsed into an object without a prototype (keys such as `__proto__` stay plain keys). */
export const encodeMetadata = (m: Metadata): string => JSON.stringify(m);
export function decodeMetadata(text: string): Metadata {
  return Object.assign(Object.create(null) as Metadata, JSON.parse(text) as Metadata);
}

/** Why text with a lone surrogate is refused: the issue message every input path gives. */
export const ILL_FORMED = 'must be well-formed Unicode text (no lone UTF-16 surrogates)';

/**
 * The first path under `value` holding a string (or a key) that is not well-formed UTF-16, or
 * undefined. Text with a lone surrogate (`"\ud800"` in JSON) cannot be stored as UTF-8: SQLite and
 * PostgreSQL would keep U+FFFD or refuse it, so two identifiers would read back alike. Every input
 * (JSON, forms, query, path: http/json-body.ts, before any schema; an imported file's rows:
 * licenses/import-rules.ts) passes here: one rule for every text field stored.
 */
export function illFormedPath(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : path;
  // Raw bytes (a signed Stripe event, an uploaded image) are not text: for-in would visit every
  // byte's index (0.4 ms for a 4 KiB event, 150 ms for a 1 MiB image) and find only numbers.
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return undefined;
  // for-in, not Object.entries: no arrays allocated per request. Parsed bodies, queries and
  // params are plain data (secure-json-parse drops __proto__), so it walks own keys only.
  for (const key in value) {
    if (!key.isWellFormed()) return path || 'body';
    const item = (value as Record<string, unknown>)[key];
    // A path is built only for what is returned or walked into.
    if (typeof item === 'string' ? !item.isWellFormed() : typeof item === 'object' && item !== null) {
      const found = illFormedPath(item, path ? `${path}.${key}` : key);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

declare global {
  interface String {
    /** ES2024 (in Node 20; the compile target's library predates it): false when the text holds a lone surrogate. */
    isWellFormed(): boolean;
  }
}

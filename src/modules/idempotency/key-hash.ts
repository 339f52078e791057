/**
 * The SQLite store's hash of a key, stored with its row (`key_hash`) and indexed in memory: FNV-1a
 * over the UTF-16 code units of `accountId`, a newline and `key`, as a signed 32-bit integer (a small
 * integer in V8, so the index holds no object per key). It needs no resistance to crafted keys: a hash
 * only narrows where to look, the row itself decides (modules/idempotency/sqlite-keys.ts). Rows keep
 * it, so changing it needs a migration that rewrites the column.
 */
export function keyHash(accountId: string, key: string): number {
  let h = 0x811c9dc5;
  h = mix(h, accountId);
  h = Math.imul(h ^ 10, 0x01000193);
  return mix(h, key) | 0;
}

function mix(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/**
 * Whether a statement failed on a UNIQUE constraint or primary key: PostgreSQL's SQLSTATE 23505,
 * SQLite's extended result codes (named as better-sqlite3 names them, for either binding:
 * sqlite-binding.ts). Repositories turn it into the domain's own error.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

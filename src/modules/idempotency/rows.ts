import type { KeyRow } from './service.ts';

/** How a key's row is bound and read on either store. */
export type Params = { account: string; key: string; hash: string; lockedUntil: number; expiresAt: number };
/** A row's parameters with its answer (null while the request has not answered). */
export type RowParams = Params & { status: number | null; type: string | null; body: string | null };
export type Found = { request_hash: string; response_status: number | null; response_type: string | null; response_body: string | null; locked_until: number; expires_at: number };

/** The columns a key's row is read with. */
export const FOUND_COLUMNS = ['request_hash', 'response_status', 'response_type', 'response_body', 'locked_until', 'expires_at'] as const;

/** The columns a key's row is written with beside its account and key, each from its named parameter. */
export const answerColumns = (p: <K extends keyof RowParams>(name: K) => RowParams[K]) => ({
  request_hash: p('hash'),
  response_status: p('status'),
  response_type: p('type'),
  response_body: p('body'),
  locked_until: p('lockedUntil'),
  expires_at: p('expiresAt'),
});

export const rowParams = (r: KeyRow): RowParams => ({
  account: r.accountId,
  key: r.key,
  hash: r.hash,
  lockedUntil: r.lockedUntil,
  expiresAt: r.expiresAt,
  status: r.response?.status ?? null,
  type: r.response?.contentType ?? null,
  body: r.response?.body ?? null,
});

/** A found row as the service sees it. */
export function keyRow(accountId: string, key: string, row: Found): KeyRow {
  return {
    accountId,
    key,
    hash: row.request_hash,
    response: row.response_status === null ? null : { status: row.response_status, contentType: row.response_type, body: row.response_body ?? '' },
    lockedUntil: Number(row.locked_until),
    expiresAt: Number(row.expires_at),
  };
}

import { invalidRequest } from './errors.ts';

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
// ISO 8601 date-time with a mandatory Z or numeric offset; fractional seconds optional.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Parses `expiresAt` as accepted in requests: an ISO 8601 date-time with `Z` or an offset, or
 * `YYYY-MM-DD` meaning midnight UTC. Returns epoch milliseconds; anything else is a 400.
 */
export function parseTimestamp(input: string, path = 'expiresAt'): number {
  const value = input.trim();
  let ms = Number.NaN;
  if (DATE_ONLY.test(value)) ms = Date.parse(`${value}T00:00:00.000Z`);
  else if (DATE_TIME.test(value)) ms = Date.parse(value);
  // Date.parse rolls 2026-02-30 over to March; reject dates whose calendar day does not exist.
  if (Number.isFinite(ms) && DATE_ONLY.test(value.slice(0, 10))) {
    const [y, m, d] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
    const probe = new Date(Date.UTC(y, m - 1, d));
    if (probe.getUTCMonth() !== m - 1 || probe.getUTCDate() !== d) ms = Number.NaN;
  }
  if (!Number.isFinite(ms)) {
    throw invalidRequest(path, 'must be an ISO 8601 date-time with Z or an offset, or a date YYYY-MM-DD');
  }
  return ms;
}

/** Timestamps in responses: ISO 8601 UTC with milliseconds. */
export const toIso = (ms: number): string => new Date(ms).toISOString();
export const toIsoOrNull = (ms: number | null): string | null => (ms === null ? null : toIso(ms));
export const toUnixSeconds = (ms: number): number => Math.floor(ms / 1000);

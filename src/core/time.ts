import { invalidRequest } from './errors.ts';

/**
 * The one date parser for requests. Accepted: `YYYY-MM-DD` (midnight UTC) or
 * `YYYY-MM-DDTHH:mm[:ss[.fraction]]` with `Z` or an offset `±HH:MM` / `±HHMM` (at most 14 hours,
 * the real world's range). Refused: days that do not exist, hour 24, second 60 (the clock has no
 * leap seconds), and instants outside 1970-01-01T00:00:00.000Z .. 9999-12-31T23:59:59.999Z once the
 * offset is applied, so every answer has the documented form `YYYY-MM-DDTHH:mm:ss.sssZ` (no
 * `+010000-...`) and no year is read the way `Date.UTC` reads 0-99 (as 1900-1999).
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2})))?$/i;

export const TIMESTAMP_MIN = 0;
export const TIMESTAMP_MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const MAX_OFFSET_MINUTES = 14 * 60;

function parse(value: string): number | undefined {
  const m = DATE_TIME.exec(value);
  if (!m) return undefined;
  // A time carries its zone (the pattern requires it); a date alone is midnight UTC.
  const [, y, mo, d, h, mi, s, frac, , sign, oh, om] = m;
  const year = Number(y), month = Number(mo), day = Number(d);
  const hour = Number(h ?? 0), minute = Number(mi ?? 0), second = Number(s ?? 0);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const probe = new Date(0);
  probe.setUTCFullYear(year, month - 1, day); // setUTCFullYear takes the year as given (no 1900s mapping)
  if (probe.getUTCFullYear() !== year || probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day) return undefined;
  let offset = 0;
  if (sign !== undefined) {
    if (Number(om) > 59) return undefined;
    offset = (Number(oh) * 60 + Number(om)) * (sign === '-' ? -1 : 1);
    if (Math.abs(offset) > MAX_OFFSET_MINUTES) return undefined;
  }
  const ms = Math.floor(Number(`0.${frac ?? '0'}`) * 1000);
  const instant = probe.getTime() + ((hour * 60 + minute - offset) * 60 + second) * 1000 + ms;
  return instant >= TIMESTAMP_MIN && instant <= TIMESTAMP_MAX ? instant : undefined;
}

/** Parses a date as accepted in requests (see above) into epoch milliseconds; anything else is a 400. */
export function parseTimestamp(input: string, path = 'expiresAt'): number {
  const ms = parse(input.trim());
  if (ms === undefined) {
    throw invalidRequest(path, 'must be an ISO 8601 date-time with Z or an offset, or a date YYYY-MM-DD, between 1970-01-01 and 9999-12-31 (UTC)');
  }
  return ms;
}

/** Timestamps in responses: ISO 8601 UTC with milliseconds. */
export const toIso = (ms: number): string => new Date(ms).toISOString();
export const toIsoOrNull = (ms: number | null): string | null => (ms === null ? null : toIso(ms));
export const toUnixSeconds = (ms: number): number => Math.floor(ms / 1000);

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

const DAY_MS = 86_400_000;
const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * Timestamps in responses: ISO 8601 UTC with milliseconds, exactly as `Date#toISOString` writes
 * them. Computed here for the instants the service stores (1970 to 9999, whole milliseconds):
 * `toISOString` costs about 350 ns, and a validation answer carries two or three dates.
 */
export function toIso(ms: number): string {
  if (!Number.isInteger(ms) || ms < TIMESTAMP_MIN || ms > TIMESTAMP_MAX) return new Date(ms).toISOString();
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  // Days since 1970-01-01 to a civil date (H. Hinnant's days_from_civil inverted; eras of 400 years).
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(hour)}:${pad2(minute)}:${pad2(second)}.${pad3(rest - second * 1000)}Z`;
}

export const toIsoOrNull = (ms: number | null): string | null => (ms === null ? null : toIso(ms));
export const toUnixSeconds = (ms: number): number => Math.floor(ms / 1000);

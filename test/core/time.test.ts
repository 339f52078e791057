import { describe, expect, it } from 'vitest';
import { parseTimestamp, TIMESTAMP_MAX, toIso } from '../../src/core/time.ts';

const iso = (input: string) => toIso(parseTimestamp(input));
const refused = (input: string) => expect(() => parseTimestamp(input), input).toThrowError(expect.objectContaining({ code: 'invalid_request' }));

describe('the one date parser (issue 14, item 13)', () => {
  it('applies offsets, both spellings, and keeps milliseconds', () => {
    expect(iso('2027-03-01T10:00:00.123+02:00')).toBe('2027-03-01T08:00:00.123Z');
    expect(iso('2027-03-01T10:00-0530')).toBe('2027-03-01T15:30:00.000Z');
    expect(iso('2027-03-01T00:30:00+14:00')).toBe('2027-02-28T10:30:00.000Z');
    expect(iso('2027-03-01T10:00:00.123456789Z')).toBe('2027-03-01T10:00:00.123Z');
    expect(iso('2028-02-29')).toBe('2028-02-29T00:00:00.000Z');
  });

  it('accepts the bounds exactly', () => {
    expect(iso('1970-01-01T00:00:00Z')).toBe('1970-01-01T00:00:00.000Z');
    expect(iso('9999-12-31T23:59:59.999Z')).toBe('9999-12-31T23:59:59.999Z');
    expect(iso('9999-12-31T23:59:59.999+14:00')).toBe('9999-12-31T09:59:59.999Z');
    expect(parseTimestamp('9999-12-31T23:59:59.999Z')).toBe(TIMESTAMP_MAX);
  });

  it('refuses an instant past 9999 once the offset is applied (was answered as +010000-01-01T13:59:59.999Z)', () => {
    refused('9999-12-31T23:59:59.999-14:00');
    refused('9999-12-31T23:00:00-01:00');
  });

  it('refuses years before 1970, and never maps 0000-0099 to the 1900s', () => {
    refused('0050-06-01');
    refused('0000-01-01T00:00:00Z');
    refused('0099-12-31T23:59:59Z');
    refused('1969-12-31T23:59:59.999Z');
    refused('1970-01-01T00:30:00+01:00');
  });

  it('refuses hour 24, second 60, minute 60 and impossible offsets (T24:00:00Z rolled over before)', () => {
    refused('2027-03-01T24:00:00Z');
    refused('2027-03-01T23:59:60Z');
    refused('2027-03-01T23:60:00Z');
    refused('2027-03-01T10:00:00+14:01');
    refused('2027-03-01T10:00:00+02:60');
    refused('2027-03-01T10:00:00+99:00');
  });

  it.each(['2027-03-01T10:00:00', 'tomorrow', '2027-02-30', '2029-02-29', '2027-13-01', '2027-00-10', '1700000000', '', '2027-03-01 10:00Z', '+010000-01-01T00:00:00Z', '2027-03-01Z', '２０２７-03-01'])(
    'refuses %j',
    refused,
  );
});

describe('toIso', () => {
  it('writes every stored instant exactly as Date#toISOString does', () => {
    const DAY = 86_400_000;
    const instants = [0, 1, 999, DAY - 1, DAY, Date.UTC(2000, 1, 29, 12), Date.UTC(2100, 1, 28, 23, 59, 59, 999), Date.UTC(2100, 2, 1), TIMESTAMP_MAX - 1, TIMESTAMP_MAX];
    // A day in every week from 1970 to 9999, at a time of day that moves through the whole day.
    for (let day = 0; day * DAY <= TIMESTAMP_MAX; day += 7) instants.push(day * DAY + ((day * 7919) % DAY));
    expect(instants.filter((ms) => toIso(ms) !== new Date(ms).toISOString())).toEqual([]);
  });

  it('leaves what the service never stores to Date#toISOString', () => {
    for (const ms of [-1, TIMESTAMP_MAX + 1, 1.5]) expect(toIso(ms)).toBe(new Date(ms).toISOString());
  });
});

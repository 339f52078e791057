import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateLicenseKey, isWellFormedLicenseKey, KEY_ALPHABET, normalizeLicenseKey } from '../../src/core/license-key.ts';
import { licenseStatus, statusIsValid } from '../../src/core/license-status.ts';
import { parseTimestamp, toIso } from '../../src/core/time.ts';
import { checkActionUrl, renderActionUrl } from '../../src/core/action-url.ts';

describe('license key format', () => {
  it('is five groups of five from the alphabet without look-alikes', () => {
    const keys = new Set(Array.from({ length: 2000 }, generateLicenseKey));
    expect(keys.size).toBe(2000);
    for (const key of keys) {
      expect(key).toMatch(/^[A-Z2-9]{5}(-[A-Z2-9]{5}){4}$/);
      expect(isWellFormedLicenseKey(key)).toBe(true);
      expect(key).not.toMatch(/[01OI]/);
    }
  });

  describe('no bias: a chi-square test of symbol frequencies', () => {
    const KEYS = 4000; // 100,000 symbols: about 3,125 expected per symbol, 125 per symbol and position
    const POSITIONS = 25;
    // Critical values of the chi-square distribution at p = 1e-7 (scipy.stats.chi2.isf(1e-7, df)):
    // an unbiased generator fails this test about once in ten million runs.
    const CRITICAL_OVERALL = 90.44; // df = 32 - 1
    const CRITICAL_BY_POSITION = 997.3; // df = 25 × (32 - 1)

    /** Pearson's statistic of `counts` against a uniform distribution. */
    function chiSquare(counts: number[]): number {
      const total = counts.reduce((a, b) => a + b, 0);
      const expected = total / counts.length;
      return counts.reduce((sum, observed) => sum + (observed - expected) ** 2 / expected, 0);
    }

    /** Overall statistic and the sum of the per-position statistics, over keys from `generate`. */
    function bias(generate: () => string) {
      const overall = new Array<number>(KEY_ALPHABET.length).fill(0);
      const byPosition = Array.from({ length: POSITIONS }, () => new Array<number>(KEY_ALPHABET.length).fill(0));
      for (let k = 0; k < KEYS; k++) {
        const symbols = generate().replaceAll('-', '');
        if (symbols.length !== POSITIONS) throw new Error(`not ${POSITIONS} symbols: ${symbols}`);
        for (let i = 0; i < POSITIONS; i++) {
          const index = KEY_ALPHABET.indexOf(symbols[i]!);
          if (index < 0) throw new Error(`symbol ${symbols[i]} is not in the alphabet`);
          overall[index]!++;
          byPosition[i]![index]!++;
        }
      }
      const result = { overall: chiSquare(overall), byPosition: byPosition.reduce((sum, counts) => sum + chiSquare(counts), 0) };
      return { ...result, biased: result.overall > CRITICAL_OVERALL || result.byPosition > CRITICAL_BY_POSITION };
    }

    /** A key from `symbol(i)` for each of the 25 positions, grouped like the real ones. */
    const keyOf = (symbol: (position: number) => string) =>
      Array.from({ length: 5 }, (_, g) => Array.from({ length: 5 }, (_, i) => symbol(g * 5 + i)).join('')).join('-');

    it('flags biased generators (the check itself can fail)', () => {
      // byte % 31: a modulus that does not divide 256, and the last symbol never comes up.
      expect(bias(() => keyOf(() => KEY_ALPHABET[randomBytes(1)[0]! % 31]!)).biased).toBe(true);
      // Modulo bias alone: every symbol appears, but 300 % 32 = 12 symbols are 11 % more likely.
      const moduloBiased = bias(() => keyOf(() => KEY_ALPHABET[randomInt(300) % 32]!));
      expect(moduloBiased.overall).toBeGreaterThan(CRITICAL_OVERALL);
      // Uniform overall, but each group starts from the first half of the alphabet and goes on
      // from the second: only the per-position statistic sees it.
      const halves = (p: number) => (p % 5 === 0 ? randomInt(16) : p % 5 === 1 ? 16 + randomInt(16) : randomInt(32));
      const positionBiased = bias(() => keyOf((p) => KEY_ALPHABET[halves(p)]!));
      expect(positionBiased.overall).toBeLessThan(CRITICAL_OVERALL);
      expect(positionBiased.byPosition).toBeGreaterThan(CRITICAL_BY_POSITION);
      // And an unbiased reference passes.
      expect(bias(() => keyOf(() => KEY_ALPHABET[randomInt(32)]!)).biased).toBe(false);
    });

    it('generateLicenseKey draws every symbol uniformly, at every position', () => {
      const result = bias(generateLicenseKey);
      expect(result.overall, 'chi-square over symbol frequencies').toBeLessThan(CRITICAL_OVERALL);
      expect(result.byPosition, 'chi-square per position').toBeLessThan(CRITICAL_BY_POSITION);
    });
  });

  it('trims and upper-cases input keys', () => {
    expect(normalizeLicenseKey('  k7qpm-2xhda-9rtwc-b4nze-6fjuv \n')).toBe('K7QPM-2XHDA-9RTWC-B4NZE-6FJUV');
  });
});

describe('expiresAt parsing', () => {
  it('accepts date-times with Z or an offset, and plain dates as midnight UTC', () => {
    expect(toIso(parseTimestamp('2027-03-01T10:00:00Z'))).toBe('2027-03-01T10:00:00.000Z');
    expect(toIso(parseTimestamp('2027-03-01T10:00:00.123+02:00'))).toBe('2027-03-01T08:00:00.123Z');
    expect(toIso(parseTimestamp('2027-03-01'))).toBe('2027-03-01T00:00:00.000Z');
  });

  it.each(['2027-03-01T10:00:00', 'tomorrow', '2027-02-30', '2027-13-01', '1700000000', '', '2027-03-01 10:00Z'])('rejects %j', (input) => {
    expect(() => parseTimestamp(input)).toThrowError(expect.objectContaining({ code: 'invalid_request' }));
  });
});

describe('license status rule', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  const past = now - 1;
  const future = now + 1;

  it('orders revoked, expired/fallbacked, active', () => {
    expect(licenseStatus({ revoked: true, type: 'timed', expiresAt: past }, true, now)).toBe('revoked');
    expect(licenseStatus({ revoked: false, type: 'timed', expiresAt: past }, false, now)).toBe('expired');
    expect(licenseStatus({ revoked: false, type: 'timed', expiresAt: past }, true, now)).toBe('fallbacked');
    expect(licenseStatus({ revoked: false, type: 'timed', expiresAt: future }, false, now)).toBe('active');
    expect(licenseStatus({ revoked: false, type: 'perpetual', expiresAt: null }, false, now)).toBe('active');
  });

  it('treats fallbacked as valid', () => {
    expect(statusIsValid('fallbacked')).toBe(true);
    expect(statusIsValid('expired')).toBe(false);
    expect(statusIsValid('revoked')).toBe(false);
  });
});

describe('action button URL', () => {
  it('accepts http(s) with {key} and renders the key URL-encoded', () => {
    expect(() => checkActionUrl('https://example.com/activate?key={key}')).not.toThrow();
    expect(renderActionUrl('https://x.test/?k={key}', 'AB CD')).toBe('https://x.test/?k=AB%20CD');
  });

  it.each(['javascript:alert(1)', 'ftp://x.test/', '/relative', 'not a url'])('rejects %j', (url) => {
    expect(() => checkActionUrl(url)).toThrowError(expect.objectContaining({ code: 'invalid_request' }));
  });
});

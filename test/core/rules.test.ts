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

  it('uses every symbol of the alphabet (no bias toward a subset)', () => {
    const seen = new Set(Array.from({ length: 500 }, generateLicenseKey).join('').replaceAll('-', ''));
    expect(seen.size).toBe(KEY_ALPHABET.length);
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

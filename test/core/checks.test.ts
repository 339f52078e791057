import { describe, expect, it } from 'vitest';
import { CHECKS, evaluate, failureError, type Subject } from '../../src/modules/licenses/checks.ts';
import type { LicenseRecord } from '../../src/modules/licenses/types.ts';

const NOW = Date.parse('2027-01-01T00:00:00Z');
const license = (fields: Partial<LicenseRecord> = {}): LicenseRecord => ({
  key: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE',
  accountId: 'u1',
  productId: 'p_right',
  type: 'perpetual',
  expiresAt: null,
  revoked: false,
  email: null,
  maxDevices: 2,
  createdAt: 0,
  entitlements: [],
  trial: false,
  ...fields,
});
const subject = (fields: Partial<LicenseRecord> = {}, rest: Partial<Subject> = {}): Subject => ({
  license: license(fields),
  fallbackEnabled: false,
  deviceActive: false,
  activeDeviceCount: 0,
  ...rest,
});
const expiredTimed = { type: 'timed' as const, expiresAt: NOW - 1 };

describe('the one ordered list of license checks', () => {
  it('runs in the order the contract gives: product, revoked, expired, device, slot', () => {
    expect(CHECKS.map(([failure]) => failure)).toEqual(['product_mismatch', 'revoked', 'expired', 'device_not_activated', 'max_devices_reached']);
  });

  it('tells nothing about a license asked with another product: a revoked one is product_mismatch, not revoked', () => {
    const verdict = evaluate(subject({ revoked: true }), { productIds: ['p_other'], now: NOW });
    expect(verdict).toMatchObject({ ok: false, failure: 'product_mismatch' });
    expect(failureError('product_mismatch').code).toBe('invalid_license');
  });

  it('puts revoked before expired, and expired before the device and slot checks', () => {
    expect(evaluate(subject({ revoked: true, ...expiredTimed }), { now: NOW })).toMatchObject({ ok: false, failure: 'revoked', status: 'revoked' });
    expect(evaluate(subject(expiredTimed), { requireActiveDevice: true, now: NOW })).toMatchObject({ ok: false, failure: 'expired' });
    expect(evaluate(subject(expiredTimed, { activeDeviceCount: 5 }), { needsSlot: true, now: NOW })).toMatchObject({ ok: false, failure: 'expired' });
  });

  it('lets a fallbacked license through: valid with limited access', () => {
    expect(evaluate(subject(expiredTimed, { fallbackEnabled: true }), { productIds: ['p_right'], now: NOW })).toMatchObject({ ok: true, status: 'fallbacked' });
  });

  it('needs an active device only when asked, and a free slot only for a device that holds none', () => {
    expect(evaluate(subject(), { requireActiveDevice: true, now: NOW })).toMatchObject({ ok: false, failure: 'device_not_activated', status: 'active' });
    expect(evaluate(subject({}, { activeDeviceCount: 2 }), { needsSlot: true, now: NOW })).toMatchObject({ ok: false, failure: 'max_devices_reached' });
    expect(evaluate(subject({}, { activeDeviceCount: 2, deviceActive: true }), { needsSlot: true, now: NOW })).toMatchObject({ ok: true });
    expect(evaluate(subject({}, { activeDeviceCount: 1 }), { needsSlot: true, now: NOW })).toMatchObject({ ok: true });
  });

  it('answers not_found with no status for a missing license, whatever else is asked', () => {
    expect(evaluate({ license: undefined, fallbackEnabled: false }, { productIds: ['p'], requireActiveDevice: true, now: NOW })).toEqual({ ok: false, failure: 'not_found', status: null });
  });

  it('gives the status with every failure of an existing license (server validate reports it)', () => {
    expect(evaluate(subject(), { productIds: ['p_other'], now: NOW })).toMatchObject({ ok: false, status: 'active' });
  });

  it('refuses to decide a slot without the device count (no placeholder counts)', () => {
    expect(() => evaluate({ license: license(), fallbackEnabled: false }, { needsSlot: true, now: NOW })).toThrow(/active device count/);
  });

  describe('leases (floating products)', () => {
    it('a lapsed lease is a device not activated: validation fails, whatever else holds', () => {
      expect(evaluate(subject({}, { deviceActive: true, leaseExpiresAt: NOW }), { requireActiveDevice: true, now: NOW })).toMatchObject({ ok: false, failure: 'device_not_activated', status: 'active' });
      expect(evaluate(subject({}, { deviceActive: true, leaseExpiresAt: NOW + 1 }), { requireActiveDevice: true, now: NOW })).toMatchObject({ ok: true });
      expect(evaluate(subject({}, { deviceActive: true, leaseExpiresAt: null }), { requireActiveDevice: true, now: NOW })).toMatchObject({ ok: true });
    });

    it('a device with a lapsed lease needs a free slot to activate again; a live one keeps its own', () => {
      const full = { deviceActive: true, activeDeviceCount: 2 };
      expect(evaluate(subject({}, { ...full, leaseExpiresAt: NOW - 1 }), { needsSlot: true, now: NOW })).toMatchObject({ ok: false, failure: 'max_devices_reached' });
      expect(evaluate(subject({}, { ...full, leaseExpiresAt: NOW + 1 }), { needsSlot: true, now: NOW })).toMatchObject({ ok: true });
    });

    it('the license checks still come first: a revoked license with a lapsed lease is revoked', () => {
      expect(evaluate(subject({ revoked: true }, { deviceActive: true, leaseExpiresAt: NOW - 1 }), { requireActiveDevice: true, now: NOW })).toMatchObject({ failure: 'revoked' });
    });
  });
});

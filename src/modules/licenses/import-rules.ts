import { invalidRequest } from '../../core/errors.ts';
import { isValidEmail } from '../../core/email.ts';
import { normalizeLicenseKey } from '../../core/license-key.ts';
import { ILL_FORMED, illFormedPath } from '../../core/text.ts';
import { parseTimestamp } from '../../core/time.ts';
import { DEVICE_IDENTIFIER_MAX, DEVICE_NAME_MAX, MAX_DEVICES_MAX } from './limits.ts';
import type { Device, License, LicenseType } from './types.ts';

/** A license brought from another service (the hosted one): its key, dates and devices kept. */
export interface ImportLicenseInput {
  key: string;
  productId: string;
  type: LicenseType;
  expiresAt?: string | null;
  maxDevices: number;
  email?: string | null;
  revoked?: boolean;
  /** When the license was created there; the import time when absent. */
  createdAt?: string | null;
  devices?: { identifier: string; name: string; activationDate?: string | null }[];
}

/**
 * Keys as the hosted service issues them: five groups of five letters or digits. Its alphabet is
 * not ours (ours leaves out 0/O and 1/I), so any of A-Z and 0-9 is accepted as given; lookups
 * upper-case what clients send, so keys are stored upper-cased.
 */
const IMPORTED_KEY = /^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$/;

/** Clock skew allowed for a creation or activation date "in the future". */
const FUTURE_SLACK_MS = 5 * 60_000;

/** Hostile input: a file may hold a number or an object where a date belongs. */
function optionalString(value: unknown, path: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalidRequest(path, 'must be a string');
  return value;
}

function pastTimestamp(value: unknown, path: string, now: number): number {
  const input = optionalString(value, path);
  if (input === null) return now;
  const at = parseTimestamp(input, path);
  if (at > now + FUTURE_SLACK_MS) throw invalidRequest(path, 'must not be in the future');
  return at;
}

/**
 * The rules an imported license must meet, the same as a created one's (decisions.md) plus its
 * own: well-formed text throughout, a key in the hosted format, a past creation date, devices
 * unique by identifier with identifiers and names of the activation's lengths. Returns the license to store; throws a 400
 * naming the field. A license may hold more devices than maxDevices (as after lowering it).
 */
export function importedLicense(input: ImportLicenseInput, accountId: string, now: number, resolveExpiry: (type: LicenseType, expiresAt: string | null | undefined) => number | null): License {
  // The API's rule for every text it stores (a JSON file carries "\ud800" as the API's bodies do).
  const illFormed = illFormedPath(input, '');
  if (illFormed !== undefined) throw invalidRequest(illFormed, ILL_FORMED);
  const key = normalizeLicenseKey(optionalString(input.key, 'key') ?? '');
  if (!IMPORTED_KEY.test(key)) throw invalidRequest('key', 'must be five groups of five letters or digits, e.g. K7QPM-2XHDA-9RTWC-B4NZE-6FJUV');
  const productId = optionalString(input.productId, 'productId')?.trim();
  if (!productId) throw invalidRequest('productId', 'is required');
  if (input.type !== 'perpetual' && input.type !== 'timed') throw invalidRequest('type', 'must be perpetual or timed');
  if (!Number.isInteger(input.maxDevices) || input.maxDevices < 1 || input.maxDevices > MAX_DEVICES_MAX) throw invalidRequest('maxDevices', `must be an integer from 1 to ${MAX_DEVICES_MAX}`);
  const email = optionalString(input.email, 'email')?.trim() || null;
  if (email !== null && !isValidEmail(email)) throw invalidRequest('email', 'must be an e-mail address');
  if (input.revoked !== undefined && typeof input.revoked !== 'boolean') throw invalidRequest('revoked', 'must be true or false');
  const createdAt = pastTimestamp(input.createdAt, 'createdAt', now);
  if (input.devices !== undefined && !Array.isArray(input.devices)) throw invalidRequest('devices', 'must be a list');
  const seen = new Set<string>();
  const devices: Device[] = (input.devices ?? []).map((d, i) => {
    const at = `devices.${i}`;
    if (typeof d !== 'object' || d === null) throw invalidRequest(at, 'must be an object with identifier, name and activationDate');
    const identifier = typeof d.identifier === 'string' ? d.identifier.trim() : '';
    const name = typeof d.name === 'string' ? d.name.trim() : '';
    if (!identifier || identifier.length > DEVICE_IDENTIFIER_MAX) throw invalidRequest(`${at}.identifier`, `must be 1 to ${DEVICE_IDENTIFIER_MAX} characters`);
    if (!name || name.length > DEVICE_NAME_MAX) throw invalidRequest(`${at}.name`, `must be 1 to ${DEVICE_NAME_MAX} characters`);
    if (seen.has(identifier)) throw invalidRequest(`${at}.identifier`, 'appears twice on this license');
    seen.add(identifier);
    return { identifier, name, activationDate: pastTimestamp(d.activationDate, `${at}.activationDate`, now) };
  });
  return {
    key,
    accountId,
    productId,
    type: input.type,
    expiresAt: resolveExpiry(input.type, optionalString(input.expiresAt, 'expiresAt')),
    revoked: input.revoked ?? false,
    email,
    maxDevices: input.maxDevices,
    createdAt,
    // The product's defaults, filled in by the import once it has read the product.
    entitlements: [],
    metadata: {},
    trial: false,
    activeDevices: devices,
  };
}

import type { DeviceActivation } from '../../core/events.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Metadata } from './metadata.ts';

export type LicenseType = 'perpetual' | 'timed';

export interface Device {
  identifier: string;
  name: string;
  activationDate: number;
  /** A floating product's lease end (epoch ms); null on a node-locked product. */
  leaseExpiresAt?: number | null;
  /** Last activation, validation, token or heartbeat (coalesced: up to a minute behind, except leases); null before migration 018. */
  lastSeenAt?: number | null;
  /** Read only where a change needs it (a device's removal), and given to addDevice for a new activation. */
  activation?: DeviceActivation;
}

/** A license as stored, without its devices. Times are epoch milliseconds. */
export interface LicenseRecord {
  key: string;
  accountId: string;
  productId: string;
  type: LicenseType;
  expiresAt: number | null;
  revoked: boolean;
  email: string | null;
  maxDevices: number;
  createdAt: number;
  /** Entitlement codes (core/entitlements.ts). */
  entitlements: string[];
  /** Started as a trial from the public API: a timed license like any other (no status of its own). */
  trial: boolean;
  /** The vendor's data: read with the full record (server views, changes), never by the public hot path. */
  metadata?: Metadata;
}

/** A license record as read whole (metadata included): what changes and server views work on. */
export type FullLicenseRecord = LicenseRecord & { metadata: Metadata };

export interface License extends FullLicenseRecord {
  activeDevices: Device[];
}

/** What the hot path reads in one statement: license, product fallback flag, asking device. */
export interface ValidationRow {
  license: LicenseRecord;
  fallbackEnabled: boolean;
  /** The product's lease length when it is floating, else null. */
  leaseSeconds: number | null;
  device: Device | null;
}

/** What an activation reads with the license locked: one device and a count, never the whole list. */
export interface ActivationState {
  license: FullLicenseRecord;
  fallbackEnabled: boolean;
  /** The product's lease length when it is floating, else null. */
  leaseSeconds: number | null;
  /** The asking device when it is already active. */
  device: Device | null;
  deviceCount: number;
}

/** A device seen at `at` (epoch ms), waiting to be written (device-sightings.ts). */
export interface DeviceSighting {
  key: string;
  identifier: string;
  at: number;
}

export interface LicensePage {
  data: License[];
  nextCursor: string | null;
}

/** What the dashboard filters an account's licenses by (each filter has an index, migration 006). */
export interface LicenseFilter {
  productId?: string;
  /** `expired` includes licenses of products with fallback (their status is `fallbacked`). */
  status?: 'active' | 'expired' | 'revoked';
  /** An exact e-mail address (normalized). */
  email?: string;
  /** The start of a key (normalized). */
  keyPrefix?: string;
  /**
   * A piece (3 characters or more, lower-case) of the address, the key, or an active device's
   * identifier or name: served by migration 029's trigram indexes.
   */
  contains?: string;
  /** The list's order; `expired` always runs by expiry, newest first, and a key prefix in key order. */
  sort?: LicenseSort;
}

export type LicenseSort = 'newest' | 'oldest' | 'key';

/** A license in a list: its record and how many devices use it. */
export interface LicenseSummary extends LicenseRecord {
  activeDeviceCount: number;
}

/** Keyset position: the last row's sort value (created_at, expires_at, or none when sorting by key) and key. */
export interface SearchPosition {
  sort: number | null;
  key: string;
}

/** A license locked for a read-check-write unit, with what the checks need (its devices with their activations). */
export interface LockedLicense {
  license: FullLicenseRecord;
  fallbackEnabled: boolean;
  devices: Device[];
}

export type LicenseFields = Partial<Omit<FullLicenseRecord, 'key' | 'accountId' | 'createdAt'>>;

/**
 * Storage of licenses and devices. Writes run inside a unit of work; reads take the caller's
 * unit when they are part of one. Every account-scoped read filters by the account in SQL.
 */
/** A license with one page of its devices, and how many devices it has in all. */
export interface LicenseWithDevicePage {
  license: LicenseRecord;
  devices: Device[];
  total: number;
}

export interface LicenseRepository {
  insert(unit: Unit, license: FullLicenseRecord): Promise<void>;
  /** Inserts licenses with their devices in few statements (the import's batches). */
  insertMany(unit: Unit, licenses: License[]): Promise<void>;
  /** Which of `keys` exist, with the account owning each (any account: keys are global). */
  ownersOf(keys: string[], unit?: Unit): Promise<Map<string, string>>;
  /** The account's license with its devices. */
  getOwned(accountId: string, key: string, unit?: Unit): Promise<License | undefined>;
  /** The account's license with one page of its devices (in the API's order) and how many it has. */
  getOwnedWithDevicePage(accountId: string, key: string, offset: number, limit: number): Promise<LicenseWithDevicePage | undefined>;
  /** The account's license with its devices and its product's fallback flag (server validate's one read of the product). */
  getOwnedWithFallback(accountId: string, key: string): Promise<{ license: License; fallbackEnabled: boolean } | undefined>;
  /** The public hot path: license, product fallback flag and asking device in one statement. */
  findForValidation(key: string, deviceIdentifier: string): Promise<ValidationRow | undefined>;
  listByProduct(accountId: string, productId: string, options: { email?: string; limit: number; after?: { createdAt: number; key: string } }): Promise<License[]>;
  /** A page of the account's licenses matching `filter`, after `after`, in the filter's order (see the repository). */
  search(accountId: string, filter: LicenseFilter, now: number, options: { limit: number; after?: SearchPosition; before?: SearchPosition }): Promise<LicenseSummary[]>;
  /** How many licenses the filter matches, counting at most `cap` + 1 (above the cap the exact figure is not worth its time). */
  countMatches(accountId: string, filter: LicenseFilter, now: number, cap: number): Promise<number>;
  /** Every license of the account's product (for a product's forced delete). */
  listRecordsByProduct(unit: Unit, accountId: string, productId: string): Promise<FullLicenseRecord[]>;
  /** Reads the license (the account's, when given) and locks it against concurrent units until `unit` ends. */
  lock(unit: Unit, key: string, accountId?: string): Promise<LockedLicense | undefined>;
  /**
   * Locks the license (the account's, when given) like `lock`, reading its product's fallback flag,
   * the asking device and the number of devices: indexed, bounded whatever the device count.
   */
  lockForActivation(unit: Unit, key: string, identifier: string, accountId?: string): Promise<ActivationState | undefined>;
  /** The license with its devices as `unit` sees it (after its own changes). */
  read(unit: Unit, key: string): Promise<License | undefined>;
  /**
   * Up to `limit` of the license's devices as `unit` sees them, in the API's order, and how many it
   * has: all of them when they are that few; otherwise `limit` of them (which ones is unspecified)
   * and a count. Reads `limit` + 1 index entries, and the count only past the limit.
   */
  someDevices(unit: Unit, key: string, limit: number): Promise<{ devices: Device[]; count: number }>;
  update(unit: Unit, key: string, fields: LicenseFields): Promise<void>;
  /**
   * Gives the (locked) license `newKey`: its row, devices, purchases, portal resets, trial and audit
   * entries move to it, and the old key is then unknown everywhere.
   */
  rekey(unit: Unit, oldKey: string, newKey: string): Promise<void>;
  /** Deletes the license with its devices; returns the devices it had, with their activations. */
  delete(unit: Unit, key: string): Promise<Device[]>;
  /** Inserts the device; its row holds `device.activation` when given. */
  addDevice(unit: Unit, key: string, device: Device): Promise<void>;
  /** Renames an active device; the name it had at activation stays with its activation. */
  renameDevice(unit: Unit, key: string, identifier: string, name: string): Promise<void>;
  removeDevice(unit: Unit, key: string, identifier: string): Promise<boolean>;
  /** Moves a live lease's end to `end` and marks the device seen at `now`; false when the lease had lapsed (or the device is gone). */
  renewLease(unit: Unit, key: string, identifier: string, now: number, end: number): Promise<boolean>;
  /** Moves each device's lastSeenAt forward to its sighting (never back); a device gone meanwhile is skipped. */
  touchDevices(unit: Unit, sightings: DeviceSighting[]): Promise<void>;
  /** Deletes the license's devices whose lease ended at `now` or before; returns them, with their activations. */
  releaseLapsed(unit: Unit, key: string, now: number): Promise<Device[]>;
  removeAllDevices(unit: Unit, key: string): Promise<void>;
}

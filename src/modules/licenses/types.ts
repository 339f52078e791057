import type { Executor } from '../../storage/index.ts';

export type LicenseType = 'perpetual' | 'timed';

export interface Device {
  identifier: string;
  name: string;
  activationDate: number;
}

/** A license as stored, without its devices. Times are epoch milliseconds. */
export interface LicenseRecord {
  key: string;
  userId: string;
  productId: string;
  type: LicenseType;
  expiresAt: number | null;
  revoked: boolean;
  email: string | null;
  maxDevices: number;
  createdAt: number;
}

export interface License extends LicenseRecord {
  activeDevices: Device[];
}

/** What the hot path reads in one statement: license, product fallback flag, asking device. */
export interface ValidationRow {
  license: LicenseRecord;
  fallbackEnabled: boolean;
  device: Device | null;
}

export interface LicensePage {
  data: License[];
  nextCursor: string | null;
}

/** Primitive operations; `atomically` gives the same operations inside one atomic unit. */
/** Extra work that must commit with a change (e.g. queuing its e-mail in the outbox). */
export type UnitStep = (tx: Executor) => Promise<void>;

export interface LicenseRepository {
  insert(license: LicenseRecord, alsoInUnit?: UnitStep): Promise<void>;
  get(key: string): Promise<License | undefined>;
  findForValidation(key: string, deviceIdentifier: string): Promise<ValidationRow | undefined>;
  listByProduct(productId: string, options: { email?: string; limit: number; after?: { createdAt: number; key: string } }): Promise<License[]>;
  atomically<T>(work: (tx: LicenseUnit) => Promise<T>): Promise<T>;
}

export interface LicenseUnit {
  /** Reads the license and locks it against concurrent units until this one ends. */
  lock(key: string): Promise<{ license: LicenseRecord; fallbackEnabled: boolean; devices: Device[] } | undefined>;
  /** The license with its devices as this unit sees it (after its own changes). */
  read(key: string): Promise<License | undefined>;
  update(key: string, fields: Partial<Omit<LicenseRecord, 'key' | 'userId' | 'productId' | 'createdAt'>>): Promise<void>;
  delete(key: string): Promise<void>;
  addDevice(key: string, device: Device): Promise<void>;
  renameDevice(key: string, identifier: string, name: string): Promise<void>;
  removeDevice(key: string, identifier: string): Promise<boolean>;
  removeAllDevices(key: string): Promise<void>;
}

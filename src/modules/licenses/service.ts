import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import { normalizeEmail } from '../../core/email.ts';
import { generateLicenseKey, normalizeLicenseKey } from '../../core/license-key.ts';
import { type LicenseStatus, licenseStatus, statusIsValid } from '../../core/license-status.ts';
import { parseTimestamp } from '../../core/time.ts';
import type { ProductService } from '../products/service.ts';
import { evaluate, type Failure, failureError } from './checks.ts';
import type { Device, License, LicensePage, LicenseRecord, LicenseRepository, LicenseType, LicenseUnit, UnitStep } from './types.ts';

export interface CreateLicenseInput {
  productId: string;
  type: LicenseType;
  expiresAt?: string | null;
  maxDevices: number;
  email?: string | null;
  /** Queue the purchase e-mail to `email`, committed together with the license. */
  sendEmail?: boolean;
}

/** The purchase e-mail (the mail module's PurchaseMailer): rendered first, queued in a unit of work. */
export interface PurchaseMail {
  prepare(license: LicenseRecord): Promise<UnitStep>;
  resend(license: LicenseRecord): Promise<void>;
}

export interface UpdateLicenseInput {
  type?: LicenseType;
  expiresAt?: string | null;
  maxDevices?: number;
  email?: string | null;
  revoked?: boolean;
}

export interface DeviceInput {
  identifier: string;
  name: string;
}

export interface Activation {
  license: License;
  device: Device;
  status: LicenseStatus;
}

export type PublicValidation = { isValid: true; status: LicenseStatus; license: LicenseRecord; device: Device } | { isValid: false; reason: Failure };

export interface ServerValidation {
  isValid: boolean;
  status: LicenseStatus;
  license: License;
  device: Device | null;
}

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 100;

/** `timed` needs an expiry, `perpetual` must have none (decisions.md). */
function resolveExpiry(type: LicenseType, input: string | null | undefined, current: number | null): number | null {
  if (type === 'perpetual') {
    if (input !== undefined && input !== null) throw invalidRequest('expiresAt', 'must be null for a perpetual license');
    return null;
  }
  const expiresAt = input === undefined ? current : input === null ? null : parseTimestamp(input);
  if (expiresAt === null) throw invalidRequest('expiresAt', 'is required for a timed license');
  return expiresAt;
}

const cleanEmail = (email: string | null | undefined): string | null => (email ? email.trim() : null);

/** Issue paths name the fields as each API spells them. */
type DeviceFieldPaths = { identifier: string; name: string };
const SERVER_DEVICE_PATHS: DeviceFieldPaths = { identifier: 'device.identifier', name: 'device.name' };
const PUBLIC_DEVICE_PATHS: DeviceFieldPaths = { identifier: 'deviceIdentifier', name: 'deviceName' };

export function cleanDevice(device: DeviceInput, paths: DeviceFieldPaths): DeviceInput {
  const identifier = device.identifier.trim();
  const name = device.name.trim();
  if (!identifier) throw invalidRequest(paths.identifier, 'must not be blank');
  if (!name) throw invalidRequest(paths.name, 'must not be blank');
  return { identifier, name };
}

export function cleanIdentifier(identifier: string, path = 'deviceIdentifier'): string {
  const trimmed = identifier.trim();
  if (!trimmed) throw invalidRequest(path, 'must not be blank');
  return trimmed;
}

const toProductIds = (productId: string | string[]): string[] => (Array.isArray(productId) ? productId : [productId]);

function encodeCursor(l: LicenseRecord): string {
  return Buffer.from(JSON.stringify([l.createdAt, l.key])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; key: string } {
  try {
    const [createdAt, key] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [unknown, unknown];
    if (typeof createdAt === 'number' && typeof key === 'string') return { createdAt, key };
  } catch {
    // fall through
  }
  throw invalidRequest('query.cursor', 'is not a cursor this API returned');
}

/**
 * Licenses and their devices: creation, changes, activation and validation. Activation reads,
 * checks and writes in one atomic unit, so concurrent activations never exceed maxDevices.
 */
export class LicenseService {
  constructor(
    private readonly repo: LicenseRepository,
    private readonly products: ProductService,
    private readonly purchaseMail: PurchaseMail,
    private readonly clock: () => number = Date.now,
  ) {}

  async create(userId: string, input: CreateLicenseInput): Promise<License> {
    await this.products.get(userId, input.productId); // 404 unless the caller owns it
    const license: LicenseRecord = {
      key: generateLicenseKey(),
      userId,
      productId: input.productId,
      type: input.type,
      expiresAt: resolveExpiry(input.type, input.expiresAt, null),
      revoked: false,
      email: cleanEmail(input.email),
      maxDevices: input.maxDevices,
      createdAt: this.clock(),
    };
    const queueMail = input.sendEmail ? await this.purchaseMail.prepare(license) : undefined;
    await this.repo.insert(license, queueMail);
    return { ...license, activeDevices: [] };
  }

  /** Queues the purchase e-mail again (400 when the license has no e-mail address). */
  async sendPurchaseEmail(userId: string, key: string): Promise<void> {
    await this.purchaseMail.resend(await this.get(userId, key));
  }

  async get(userId: string, key: string): Promise<License> {
    const license = await this.repo.get(normalizeLicenseKey(key));
    if (!license || license.userId !== userId) throw notFound('License');
    return license;
  }

  async list(userId: string, productId: string, query: { email?: string; limit?: number; cursor?: string }): Promise<LicensePage> {
    await this.products.get(userId, productId);
    const limit = query.limit ?? LIST_LIMIT_DEFAULT;
    const data = await this.repo.listByProduct(productId, {
      email: query.email ? normalizeEmail(query.email) : undefined,
      limit: limit + 1,
      after: query.cursor ? decodeCursor(query.cursor) : undefined,
    });
    const more = data.length > limit;
    if (more) data.pop();
    return { data, nextCursor: more ? encodeCursor(data[data.length - 1]!) : null };
  }

  update(userId: string, key: string, input: UpdateLicenseInput): Promise<License> {
    return this.owned(userId, key, async (tx, current) => {
      const type = input.type ?? current.type;
      const changes: Parameters<LicenseUnit['update']>[1] = { type, expiresAt: resolveExpiry(type, input.expiresAt, current.expiresAt) };
      if (input.maxDevices !== undefined) changes.maxDevices = input.maxDevices;
      if (input.email !== undefined) changes.email = cleanEmail(input.email);
      if (input.revoked !== undefined) changes.revoked = input.revoked;
      await tx.update(current.key, changes);
    });
  }

  async delete(userId: string, key: string): Promise<void> {
    await this.owned(userId, key, (tx, current) => tx.delete(current.key));
  }

  async removeDevice(userId: string, key: string, identifier: string): Promise<License> {
    const id = cleanIdentifier(identifier, 'deviceId');
    return this.owned(userId, key, async (tx, current) => void (await tx.removeDevice(current.key, id)));
  }

  resetDevices(userId: string, key: string): Promise<License> {
    return this.owned(userId, key, (tx, current) => tx.removeAllDevices(current.key));
  }

  /** Server API: the caller's license (404 otherwise), then the activation checks. */
  serverActivate(userId: string, key: string, productId: string, device: DeviceInput): Promise<Activation> {
    return this.activate(key, [productId], cleanDevice(device, SERVER_DEVICE_PATHS), userId);
  }

  /** Public API: anyone holding the key; an unknown key is `invalid_license`. */
  publicActivate(key: string, productId: string | string[], device: DeviceInput): Promise<Activation> {
    return this.activate(key, toProductIds(productId), cleanDevice(device, PUBLIC_DEVICE_PATHS));
  }

  private activate(rawKey: string, productIds: string[], device: DeviceInput, userId?: string): Promise<Activation> {
    const key = normalizeLicenseKey(rawKey);
    return this.repo.atomically(async (tx) => {
      const now = this.clock();
      const state = await tx.lock(key);
      if (userId !== undefined && state?.license.userId !== userId) throw notFound('License');
      const existing = state?.devices.find((d) => d.identifier === device.identifier);
      const verdict = evaluate(
        {
          license: state?.license,
          fallbackEnabled: state?.fallbackEnabled ?? false,
          deviceActive: existing !== undefined,
          activeDeviceCount: state?.devices.length ?? 0,
        },
        { productIds, needsSlot: true, now },
      );
      if (!verdict.ok) throw failureError(verdict.failure);
      // An active device re-activating keeps its slot and activation date; only its name changes.
      let active: Device;
      let devices: Device[];
      if (existing) {
        active = { ...existing, name: device.name };
        if (existing.name !== device.name) await tx.renameDevice(key, device.identifier, device.name);
        devices = state!.devices.map((d) => (d.identifier === device.identifier ? active : d));
      } else {
        active = { ...device, activationDate: now };
        await tx.addDevice(key, active);
        devices = [...state!.devices, active];
      }
      return { license: { ...verdict.license, activeDevices: devices }, device: active, status: verdict.status };
    });
  }

  async publicValidate(rawKey: string, productId: string | string[], deviceIdentifier: string): Promise<PublicValidation> {
    const identifier = cleanIdentifier(deviceIdentifier);
    const row = await this.repo.findForValidation(normalizeLicenseKey(rawKey), identifier);
    const verdict = evaluate(
      { license: row?.license, fallbackEnabled: row?.fallbackEnabled ?? false, deviceActive: row?.device != null, activeDeviceCount: 0 },
      { productIds: toProductIds(productId), requireActiveDevice: true, now: this.clock() },
    );
    if (!verdict.ok) return { isValid: false, reason: verdict.failure };
    return { isValid: true, status: verdict.status, license: verdict.license, device: row!.device! };
  }

  async serverValidate(userId: string, key: string, query: { productId?: string; deviceIdentifier?: string }): Promise<ServerValidation> {
    const license = await this.get(userId, key);
    const status = licenseStatus(license, await this.fallbackEnabled(userId, license.productId), this.clock());
    const identifier = query.deviceIdentifier === undefined ? undefined : cleanIdentifier(query.deviceIdentifier);
    const device = identifier === undefined ? null : (license.activeDevices.find((d) => d.identifier === identifier) ?? null);
    const isValid =
      statusIsValid(status) &&
      (query.productId === undefined || query.productId === license.productId) &&
      (identifier === undefined || device !== null);
    return { isValid, status, license, device };
  }

  /** Public device removal; removing a device that is not active is a no-op (idempotent). */
  async publicRemoveDevice(rawKey: string, productId: string | string[], deviceIdentifier: string): Promise<void> {
    const key = normalizeLicenseKey(rawKey);
    const identifier = cleanIdentifier(deviceIdentifier);
    const productIds = toProductIds(productId);
    await this.repo.atomically(async (tx) => {
      const state = await tx.lock(key);
      if (!state || !productIds.includes(state.license.productId)) throw new AppError('invalid_license', 'License not found.');
      await tx.removeDevice(key, identifier);
    });
  }

  private async fallbackEnabled(userId: string, productId: string): Promise<boolean> {
    return (await this.products.get(userId, productId)).fallbackEnabled;
  }

  /** Runs a change on one of the caller's licenses atomically and returns the license after it. */
  private owned(userId: string, rawKey: string, change: (tx: LicenseUnit, current: LicenseRecord) => Promise<void>): Promise<License> {
    const key = normalizeLicenseKey(rawKey);
    return this.repo.atomically(async (tx) => {
      const state = await tx.lock(key);
      if (!state || state.license.userId !== userId) throw notFound('License');
      await change(tx, state.license);
      return (await tx.read(key)) ?? { ...state.license, activeDevices: [] };
    });
  }
}

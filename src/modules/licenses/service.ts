import { AppError, type Issue, invalidRequest, notFound } from '../../core/errors.ts';
import { normalizeEmail } from '../../core/email.ts';
import { checkEntitlements } from '../../core/entitlements.ts';
import type { DeviceSnapshot, LicenseChanges, LicenseSnapshot } from '../../core/events.ts';
import { timeOrderedId } from '../../core/ids.ts';
import { generateLicenseKey, normalizeLicenseKey } from '../../core/license-key.ts';
import type { LicenseStatus } from '../../core/license-status.ts';
import { type Actor, LEASE_ACTOR, PUBLIC_ACTOR, type Principal } from '../../core/principal.ts';
import { parseTimestamp } from '../../core/time.ts';
import { TurnBatch } from '../../core/turn-batch.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { Product, ProductService } from '../products/service.ts';
import { evaluate, type Failure, failureError } from './checks.ts';
import { type ImportLicenseInput, importedLicense } from './import-rules.ts';
import { DeviceSightings } from './device-sightings.ts';
import { DEVICE_IDENTIFIER_MAX, DEVICE_NAME_MAX } from './limits.ts';
import { applyMetadata, type MetadataChange } from './metadata.ts';
import { searchOrder } from './search.ts';
import type {
  Device,
  FullLicenseRecord,
  License,
  LicenseFields,
  LicenseFilter,
  LicenseSort,
  LicensePage,
  LicenseRecord,
  LicenseRepository,
  LicenseSummary,
  LicenseType,
  LicenseWithDevicePage,
  LockedLicense,
  SearchPosition,
} from './types.ts';

export interface CreateLicenseInput {
  productId: string;
  type: LicenseType;
  expiresAt?: string | null;
  maxDevices: number;
  email?: string | null;
  /** Queue the purchase e-mail to `email`, committed together with the license. */
  sendEmail?: boolean;
  /** Absent: the product's default entitlements. */
  entitlements?: string[];
  metadata?: MetadataChange;
  /** Set by the trials module only: the license starts a trial. */
  trial?: boolean;
}

/** The purchase e-mail (the mail module's PurchaseMailer): queued in the unit that creates the license. */
export interface PurchaseMail {
  /** Renders the e-mail for `license` and queues it in `unit` (400 when the license has no address). */
  queue(principal: Principal, license: LicenseRecord, unit: Unit): Promise<void>;
}

export interface UpdateLicenseInput {
  /** Moves the license to another product of the account, keeping key and devices (subscriptions, upgrades; not on the wire). */
  productId?: string;
  type?: LicenseType;
  expiresAt?: string | null;
  maxDevices?: number;
  email?: string | null;
  revoked?: boolean;
  /** Replaces the set. */
  entitlements?: string[];
  /** Sets the keys given; a null value removes its key. */
  metadata?: MetadataChange;
}

export interface DeviceInput {
  identifier: string;
  name: string;
}

/** An activation's outcome: the license as checked (without its device list), the device, the status. */
export interface Activation {
  license: FullLicenseRecord;
  device: Device;
  status: LicenseStatus;
}

/**
 * Signs what an activation hands out (a license token) inside its unit, synchronously: when it
 * throws, the activation rolls back, so no device keeps a slot its caller was told failed.
 */
export type ActivationSeal = (activation: Activation) => string | undefined;

export type PublicValidation =
  | { isValid: true; status: LicenseStatus; license: LicenseRecord; device: Device; /** The product's lease length when floating, else null. */ leaseSeconds: number | null }
  | { isValid: false; reason: Failure };

export interface ServerValidation {
  isValid: boolean;
  status: LicenseStatus;
  license: License;
  device: Device | null;
}

/** What importing one input would do: create it, skip it (the caller already holds the key), or why it cannot. */
export type ImportVerdict = { action: 'create' | 'skip'; license: License } | { action: 'error'; issue: Issue };

export interface ImportOutcome {
  created: string[];
  skipped: string[];
}

/** The dashboard's search: one box for a key (or its start) or an e-mail address, and filters. */
export interface LicenseSearchQuery {
  query?: string;
  productId?: string;
  status?: LicenseFilter['status'];
  sort?: LicenseSort;
  /** The page after this cursor (a previous page's `nextCursor`)... */
  cursor?: string;
  /** ...or the page before this one (a page's `prevCursor`). */
  before?: string;
  limit?: number;
}

export interface LicenseSearchPage {
  data: LicenseSummary[];
  nextCursor: string | null;
  prevCursor: string | null;
}

/**
 * A list's total is counted exactly up to this many matches and shown as "more than 10,000" above:
 * counting reads every match (about 10 ms per 10,000 index entries), and a million would cost
 * hundreds of milliseconds for a figure nobody pages through (docs/decisions/license-search.md).
 */
export const COUNT_CAP = 10_000;

const EXPORT_BATCH = 1000;

/**
 * Three characters or more: a piece of an address, a key, or a device's identifier or name (the
 * trigram indexes need three); one or two: the start of a key.
 */
function toFilter(q: LicenseSearchQuery): LicenseFilter {
  const text = q.query?.trim() ?? '';
  const filter: LicenseFilter = { productId: q.productId || undefined, status: q.status, sort: q.sort };
  // Lower case in every script, as the indexes fold device names ("Ölaf" finds "ölaf"); addresses are
  // ASCII and stored lower-cased, keys are compared without case.
  if (text.length >= 3) filter.contains = text.toLowerCase();
  else if (text) filter.keyPrefix = normalizeLicenseKey(text);
  return filter;
}

const sortValue = (l: LicenseRecord, filter: LicenseFilter): number | null => {
  const order = searchOrder(filter);
  return order === 'key' ? null : order === 'expires_at' ? l.expiresAt : l.createdAt;
};

function decodePosition(cursor: string): SearchPosition {
  try {
    const [sort, key] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [unknown, unknown];
    if ((typeof sort === 'number' || sort === null) && typeof key === 'string') return { sort, key };
  } catch {
    // fall through
  }
  throw invalidRequest('cursor', 'is not a cursor this list returned');
}

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 100;

/** `timed` needs an expiry, `perpetual` must have none (decisions.md). */
export function resolveExpiry(type: LicenseType, input: string | null | undefined, current: number | null): number | null {
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

/** decisions.md: 1 to `max` characters after trimming. */
function trimmedField(value: string, max: number, path: string): string {
  const trimmed = value.trim();
  if (!trimmed) throw invalidRequest(path, 'must not be blank');
  if (trimmed.length > max) throw invalidRequest(path, `must be at most ${max} characters`);
  return trimmed;
}

export function cleanDevice(device: DeviceInput, paths: DeviceFieldPaths): DeviceInput {
  return { identifier: trimmedField(device.identifier, DEVICE_IDENTIFIER_MAX, paths.identifier), name: trimmedField(device.name, DEVICE_NAME_MAX, paths.name) };
}

export function cleanIdentifier(identifier: string, path = 'deviceIdentifier'): string {
  return trimmedField(identifier, DEVICE_IDENTIFIER_MAX, path);
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

export const snapshot = (l: FullLicenseRecord): LicenseSnapshot => ({
  key: l.key,
  accountId: l.accountId,
  productId: l.productId,
  type: l.type,
  expiresAt: l.expiresAt,
  revoked: l.revoked,
  email: l.email,
  maxDevices: l.maxDevices,
  createdAt: l.createdAt,
  entitlements: l.entitlements,
  trial: l.trial,
  metadata: l.metadata,
});

const deviceSnapshot = (d: Device): DeviceSnapshot =>
  d.activation ? { identifier: d.identifier, name: d.name, activationDate: d.activationDate, activation: d.activation } : { identifier: d.identifier, name: d.name, activationDate: d.activationDate };

/** Values compared as the API shows them: entitlements and metadata by content. */
const same = (a: unknown, b: unknown): boolean => a === b || (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && JSON.stringify(a) === JSON.stringify(b));

/** The fields an update changed, before and after (nothing when it changed nothing). */
function changesOf(before: FullLicenseRecord, fields: LicenseFields): LicenseChanges {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const [field, to] of Object.entries(fields)) {
    const from = before[field as keyof FullLicenseRecord];
    if (to !== undefined && !same(from, to)) changes[field] = { from, to };
  }
  return changes as LicenseChanges;
}

/**
 * Licenses and their devices: the one write path for every change to them, whoever asks (server
 * API, public API, portal, purchases, dashboard). Each change runs in a unit of work (the
 * caller's when it passes one) and emits its domain event there. Activation reads, checks and
 * writes in one unit, so concurrent activations never exceed maxDevices.
 */
export class LicenseService {
  /** Public validations (and token refreshes) look their licenses up together, per event-loop turn. */
  private readonly lookups = new TurnBatch();
  /** When devices were last seen, written once a minute (the app flushes it; see registerSightingsFlush). */
  readonly sightings: DeviceSightings;

  constructor(
    private readonly repo: LicenseRepository,
    private readonly units: UnitRunner,
    private readonly products: ProductService,
    private readonly purchaseMail: PurchaseMail,
    private readonly clock: () => number = Date.now,
  ) {
    this.sightings = new DeviceSightings(repo, units);
  }

  create(principal: Principal, input: CreateLicenseInput, outer?: Unit): Promise<License> {
    return this.units.run(async (unit) => {
      const product = await this.products.get(principal, input.productId, unit); // 404 unless the caller owns it
      const now = this.clock();
      const license: FullLicenseRecord = {
        key: generateLicenseKey(),
        accountId: principal.accountId,
        productId: input.productId,
        type: input.type,
        expiresAt: resolveExpiry(input.type, input.expiresAt, null),
        revoked: false,
        email: cleanEmail(input.email),
        maxDevices: input.maxDevices,
        createdAt: now,
        entitlements: input.entitlements === undefined ? product.defaultEntitlements : checkEntitlements(input.entitlements, 'entitlements'),
        metadata: applyMetadata({}, input.metadata ?? {}),
        trial: input.trial === true,
      };
      await this.repo.insert(unit, license);
      if (input.sendEmail) await this.purchaseMail.queue(principal, license, unit);
      await unit.emit({ type: 'license.created', actor: principal.actor, occurredAt: now, license: snapshot(license) });
      return { ...license, activeDevices: [] };
    }, outer);
  }

  /**
   * Licenses brought from another service with their keys, creation dates, revocation and devices
   * (activation dates kept), so customers' keys keep working: the CLI import. One unit for the
   * list: every input is checked again inside it (checkImport's verdicts), and any bad one fails
   * the whole call with an issue per bad input (path `<index>.<field>`). A key the caller already
   * holds is skipped, so a re-run imports only what is missing. Emits license.created and a
   * device.activated per device, as if each had been created and activated here.
   */
  importLicenses(principal: Principal, inputs: ImportLicenseInput[], outer?: Unit): Promise<ImportOutcome> {
    return this.units.run(async (unit) => {
      const verdicts = await this.verdicts(principal, inputs, unit);
      const issues = verdicts.flatMap((v, i) => (v.action === 'error' ? [{ path: `${i}.${v.issue.path}`, message: v.issue.message }] : []));
      if (issues.length) throw new AppError('invalid_request', 'The import is invalid.', issues);
      const fresh = verdicts.flatMap((v) => (v.action === 'create' ? [v.license] : []));
      await this.repo.insertMany(unit, fresh);
      const now = this.clock();
      for (const license of fresh) {
        await unit.emit({ type: 'license.created', actor: principal.actor, occurredAt: now, license: snapshot(license) });
        for (const device of license.activeDevices) {
          await unit.emit({ type: 'device.activated', actor: principal.actor, occurredAt: now, license: snapshot(license), device: deviceSnapshot(device) });
        }
      }
      return { created: fresh.map((l) => l.key), skipped: verdicts.flatMap((v) => (v.action === 'skip' ? [v.license.key] : [])) };
    }, outer);
  }

  /** What importLicenses would do with each input, without writing (a dry run, and every bad row at once). */
  checkImport(principal: Principal, inputs: ImportLicenseInput[]): Promise<ImportVerdict[]> {
    return this.verdicts(principal, inputs);
  }

  private async verdicts(principal: Principal, inputs: ImportLicenseInput[], unit?: Unit): Promise<ImportVerdict[]> {
    const now = this.clock();
    const checked = inputs.map((input): ImportVerdict => {
      try {
        return { action: 'create', license: importedLicense(input, principal.accountId, now, (type, expiresAt) => resolveExpiry(type, expiresAt, null)) };
      } catch (error) {
        if (error instanceof AppError && error.issues?.[0]) return { action: 'error', issue: error.issues[0] };
        throw error;
      }
    });
    const licenses = checked.flatMap((v) => (v.action === 'error' ? [] : [v.license]));
    const owners = await this.repo.ownersOf(licenses.map((l) => l.key), unit);
    const owned = new Map<string, Product | undefined>();
    for (const productId of new Set(licenses.map((l) => l.productId))) owned.set(productId, await this.ownedProduct(principal, productId, unit));
    const seen = new Set<string>();
    return checked.map((v): ImportVerdict => {
      if (v.action === 'error') return v;
      const { key, productId } = v.license;
      const error = (path: string, message: string): ImportVerdict => ({ action: 'error', issue: { path, message } });
      if (seen.has(key)) return error('key', 'appears twice in this import');
      seen.add(key);
      const product = owned.get(productId);
      if (!product) return error('productId', 'is not a product of this account');
      v.license.entitlements = product.defaultEntitlements;
      const owner = owners.get(key);
      if (owner === principal.accountId) return { action: 'skip', license: v.license };
      return owner === undefined ? v : error('key', 'is already in use by another account');
    });
  }

  private async ownedProduct(principal: Principal, productId: string, unit?: Unit): Promise<Product | undefined> {
    try {
      return await this.products.get(principal, productId, unit);
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  /** Queues the purchase e-mail again (400 when the license has no e-mail address). */
  async sendPurchaseEmail(principal: Principal, key: string): Promise<void> {
    await this.units.run(async (unit) => this.purchaseMail.queue(principal, await this.get(principal, key, unit), unit));
  }

  async get(principal: Principal, key: string, unit?: Unit): Promise<License> {
    const license = await this.repo.getOwned(principal.accountId, normalizeLicenseKey(key), unit);
    if (!license) throw notFound('License');
    return license;
  }

  /** The license with one page of its devices (an operator's view of a license that may hold 100,000). */
  async getWithDevicePage(principal: Principal, key: string, page: { offset: number; limit: number }): Promise<LicenseWithDevicePage> {
    const found = await this.repo.getOwnedWithDevicePage(principal.accountId, normalizeLicenseKey(key), page.offset, page.limit);
    if (!found) throw notFound('License');
    return found;
  }

  /**
   * For a change's event, in its unit: up to `limit` of the license's active devices after the
   * change, and how many it has (webhook bodies: bounded whatever the device count).
   */
  someDevices(unit: Unit, key: string, limit: number): Promise<{ devices: Device[]; count: number }> {
    return this.repo.someDevices(unit, key, limit);
  }

  async list(principal: Principal, productId: string, query: { email?: string; limit?: number; cursor?: string }): Promise<LicensePage> {
    await this.products.get(principal, productId);
    const limit = query.limit ?? LIST_LIMIT_DEFAULT;
    const data = await this.repo.listByProduct(principal.accountId, productId, {
      email: query.email ? normalizeEmail(query.email) : undefined,
      limit: limit + 1,
      after: query.cursor ? decodeCursor(query.cursor) : undefined,
    });
    const more = data.length > limit;
    if (more) data.pop();
    return { data, nextCursor: more ? encodeCursor(data[data.length - 1]!) : null };
  }

  /** The account's licenses by a piece of text, product and status, a keyset page at a time, either way. */
  async search(principal: Principal, query: LicenseSearchQuery): Promise<LicenseSearchPage> {
    const filter = toFilter(query);
    const limit = query.limit ?? LIST_LIMIT_DEFAULT;
    const before = query.before ? decodePosition(query.before) : undefined;
    const after = !before && query.cursor ? decodePosition(query.cursor) : undefined;
    const data = await this.repo.search(principal.accountId, filter, this.clock(), { limit: limit + 1, after, before });
    const more = data.length > limit;
    // The extra row is past the page's far end: the last one going forward, the first one going back.
    if (more) (before ? data.shift() : data.pop());
    const position = (l: LicenseSummary | undefined) => (l ? Buffer.from(JSON.stringify([sortValue(l, filter), l.key])).toString('base64url') : null);
    return {
      data,
      nextCursor: (before ? data.length > 0 : more) ? position(data[data.length - 1]) : null,
      prevCursor: (before ? more : after !== undefined) ? position(data[0]) : null,
    };
  }

  /** How many licenses the search matches, exactly up to COUNT_CAP; `capped` when there are more. */
  async count(principal: Principal, query: LicenseSearchQuery): Promise<{ count: number; capped: boolean }> {
    const n = await this.repo.countMatches(principal.accountId, toFilter(query), this.clock(), COUNT_CAP);
    return n > COUNT_CAP ? { count: COUNT_CAP, capped: true } : { count: n, capped: false };
  }

  /** Every license the search matches, in batches of a keyset page each: memory stays flat whatever the count. */
  async *exportAll(principal: Principal, query: Omit<LicenseSearchQuery, 'cursor' | 'limit'>): AsyncGenerator<LicenseSummary[]> {
    const filter = toFilter(query);
    const now = this.clock();
    let after: SearchPosition | undefined;
    for (;;) {
      const batch = await this.repo.search(principal.accountId, filter, now, { limit: EXPORT_BATCH, after });
      if (batch.length > 0) yield batch;
      if (batch.length < EXPORT_BATCH) return;
      const last = batch[batch.length - 1]!;
      after = { sort: sortValue(last, filter), key: last.key };
    }
  }

  update(principal: Principal, key: string, input: UpdateLicenseInput, outer?: Unit): Promise<License> {
    return this.owned(principal, key, outer, async (unit, { license: current }) => {
      const type = input.type ?? current.type;
      const fields: LicenseFields = { type, expiresAt: resolveExpiry(type, input.expiresAt, current.expiresAt) };
      if (input.productId !== undefined && input.productId !== current.productId) {
        await this.products.get(principal, input.productId, unit); // 404 unless the caller owns it
        fields.productId = input.productId;
      }
      if (input.maxDevices !== undefined) fields.maxDevices = input.maxDevices;
      if (input.email !== undefined) fields.email = cleanEmail(input.email);
      if (input.revoked !== undefined) fields.revoked = input.revoked;
      if (input.entitlements !== undefined) fields.entitlements = checkEntitlements(input.entitlements, 'entitlements');
      if (input.metadata !== undefined) fields.metadata = applyMetadata(current.metadata, input.metadata);
      const changes = changesOf(current, fields);
      if (Object.keys(changes).length === 0) return;
      await this.repo.update(unit, current.key, fields);
      const after = { ...current, ...fields };
      await unit.emit({ type: 'license.updated', actor: principal.actor, occurredAt: this.clock(), license: snapshot(after), changes });
    });
  }

  /**
   * Revokes (or restores) in one locked unit through the one update; whether it changed anything
   * (a bulk action counts a license already so as skipped, without a race between look and change).
   */
  setRevoked(principal: Principal, key: string, revoked: boolean, outer?: Unit): Promise<boolean> {
    return this.units.run(async (unit) => {
      const locked = await this.repo.lock(unit, normalizeLicenseKey(key), principal.accountId);
      if (!locked) throw notFound('License');
      if (locked.license.revoked === revoked) return false;
      await this.update(principal, key, { revoked }, unit);
      return true;
    }, outer);
  }

  /**
   * Moves a timed license's expiry `days` later, counted from its current expiry (an expired license
   * may stay expired: the operator extends the term, not from today), through the one update (its
   * event, audit entry and webhooks). A perpetual license has no expiry to move: `'perpetual'`, unchanged.
   */
  extendExpiry(principal: Principal, key: string, days: number, outer?: Unit): Promise<'extended' | 'perpetual'> {
    return this.units.run(async (unit) => {
      const locked = await this.repo.lock(unit, normalizeLicenseKey(key), principal.accountId);
      if (!locked) throw notFound('License');
      const { type, expiresAt } = locked.license;
      if (type === 'perpetual' || expiresAt === null) return 'perpetual';
      await this.update(principal, key, { expiresAt: new Date(expiresAt + days * 86_400_000).toISOString() }, unit);
      return 'extended';
    }, outer);
  }

  /**
   * A new key for a leaked one (decisions.md, "Key rotation"): devices, purchases, trial and audit
   * stay with the license; the old key is unknown from then on. `notify` queues the purchase e-mail
   * (which carries the key) to the license's address, in the same unit (400 when it has none).
   */
  async rotateKey(principal: Principal, rawKey: string, options: { notify?: boolean } = {}): Promise<License> {
    const key = normalizeLicenseKey(rawKey);
    return this.units.run(async (unit) => {
      const locked = await this.repo.lock(unit, key, principal.accountId);
      if (!locked) throw notFound('License');
      const rotated = { ...locked.license, key: generateLicenseKey() };
      await this.repo.rekey(unit, key, rotated.key);
      if (options.notify) await this.purchaseMail.queue(principal, rotated, unit);
      const changes = { key: { from: key, to: rotated.key } };
      await unit.emit({ type: 'license.updated', actor: principal.actor, occurredAt: this.clock(), license: snapshot(rotated), changes });
      return (await this.repo.read(unit, rotated.key))!;
    });
  }

  async delete(principal: Principal, key: string, outer?: Unit): Promise<void> {
    await this.owned(principal, key, outer, (unit, { license }) => this.remove(unit, principal.actor, license));
  }

  /** A product's forced delete: each of its licenses goes through the one delete (and its event). */
  async deleteAllOfProduct(principal: Principal, productId: string, unit: Unit): Promise<number> {
    const licenses = await this.repo.listRecordsByProduct(unit, principal.accountId, productId);
    for (const license of licenses) await this.remove(unit, principal.actor, license);
    return licenses.length;
  }

  async removeDevice(principal: Principal, key: string, identifier: string): Promise<License> {
    const id = cleanIdentifier(identifier, 'deviceId');
    return this.owned(principal, key, undefined, (unit, locked) => this.removeOne(unit, principal.actor, locked, id));
  }

  resetDevices(principal: Principal, key: string): Promise<License> {
    return this.owned(principal, key, undefined, (unit, locked) => this.removeAll(unit, principal.actor, locked));
  }

  /**
   * Empties the devices of a license the caller has already found and locked in `unit` under its
   * own rules (the portal's scope and reset limit); returns the devices removed.
   */
  async resetDevicesIn(unit: Unit, actor: Actor, rawKey: string): Promise<Device[]> {
    const locked = await this.repo.lock(unit, normalizeLicenseKey(rawKey));
    if (!locked) throw notFound('License');
    return this.removeAll(unit, actor, locked);
  }

  /** Removes one device of a license the caller has already found and locked in `unit` (the portal); returns it, or nothing when it was not there. */
  async removeDeviceIn(unit: Unit, actor: Actor, rawKey: string, identifier: string): Promise<Device | undefined> {
    const locked = await this.repo.lock(unit, normalizeLicenseKey(rawKey));
    if (!locked) throw notFound('License');
    return this.removeOne(unit, actor, locked, identifier);
  }

  /**
   * Server API: the caller's license (404 otherwise), then the activation checks. The answer is the
   * license with its devices, read after the activation committed (outside the write).
   */
  async serverActivate(principal: Principal, key: string, productId: string, device: DeviceInput): Promise<License> {
    const activation = await this.activate(key, [productId], cleanDevice(device, SERVER_DEVICE_PATHS), principal.actor, principal.accountId);
    return (await this.repo.getOwned(principal.accountId, activation.license.key)) ?? { ...activation.license, activeDevices: [activation.device] };
  }

  /** Public API: anyone holding the key; an unknown key is `invalid_license`. `seal` signs inside the activation. */
  publicActivate(key: string, productId: string | string[], device: DeviceInput, seal?: ActivationSeal, outer?: Unit): Promise<Activation & { token?: string }> {
    return this.activate(key, toProductIds(productId), cleanDevice(device, PUBLIC_DEVICE_PATHS), PUBLIC_ACTOR, undefined, seal, outer);
  }

  private activate(
    rawKey: string,
    productIds: string[],
    device: DeviceInput,
    actor: Actor,
    accountId?: string,
    seal?: ActivationSeal,
    outer?: Unit,
  ): Promise<Activation & { token?: string }> {
    const key = normalizeLicenseKey(rawKey);
    return this.units.run(async (unit) => {
      const now = this.clock();
      const state = await this.repo.lockForActivation(unit, key, device.identifier, accountId);
      if (accountId !== undefined && !state) throw notFound('License');
      const leaseSeconds = state?.leaseSeconds ?? null;
      // Floating: lapsed leases leave first, with the license locked, so their slots are free for this
      // activation at once and the count the slot check reads is of live leases only.
      const released = state && leaseSeconds !== null ? await this.releaseLapsed(unit, state.license, now) : [];
      const existing = state?.device && !released.some((d) => d.identifier === device.identifier) ? state.device : null;
      const verdict = evaluate(
        {
          license: state?.license,
          fallbackEnabled: state?.fallbackEnabled ?? false,
          deviceActive: existing !== null,
          leaseExpiresAt: existing?.leaseExpiresAt,
          activeDeviceCount: (state?.deviceCount ?? 0) - released.length,
        },
        { productIds, needsSlot: true, now },
      );
      if (!verdict.ok) throw failureError(verdict.failure);
      const leaseEnd = leaseSeconds === null ? null : now + leaseSeconds * 1000;
      // An active device re-activating keeps its slot and activation date; only its name changes,
      // and only a change of name is an event (re-activations with the same name are frequent).
      let active: Device;
      if (existing) {
        active = { ...existing, name: device.name };
        // A re-activation on a floating product renews its lease, as a heartbeat does.
        if (leaseEnd !== null && (await this.repo.renewLease(unit, key, device.identifier, now, leaseEnd))) active = { ...active, leaseExpiresAt: leaseEnd, lastSeenAt: now };
        if (existing.name !== device.name) {
          await this.repo.renameDevice(unit, key, device.identifier, device.name);
          const changes = { name: { from: existing.name, to: device.name } };
          await unit.emit({ type: 'device.updated', actor, occurredAt: now, license: snapshot(verdict.license), device: deviceSnapshot(active), changes });
        }
      } else {
        active = { ...device, activationDate: now, leaseExpiresAt: leaseEnd, lastSeenAt: now, activation: { id: timeOrderedId(now), actor, name: device.name } };
        await this.repo.addDevice(unit, key, active);
        await unit.emit({ type: 'device.activated', actor, occurredAt: now, license: snapshot(verdict.license), device: deviceSnapshot(active) });
      }
      // A new device's row holds its activation time as lastSeenAt; a re-activation is a sighting.
      if (existing && active.lastSeenAt !== now) this.sightings.seen(key, device.identifier, now);
      const activation: Activation = { license: verdict.license, device: active, status: verdict.status };
      const token = seal?.(activation);
      return token === undefined ? activation : { ...activation, token };
    }, outer);
  }

  async publicValidate(rawKey: string, productId: string | string[], deviceIdentifier: string): Promise<PublicValidation> {
    const key = normalizeLicenseKey(rawKey);
    const identifier = cleanIdentifier(deviceIdentifier);
    const row = await this.lookups.run(() => this.repo.findForValidation(key, identifier));
    const now = this.clock();
    const verdict = evaluate(
      { license: row?.license, fallbackEnabled: row?.fallbackEnabled ?? false, deviceActive: row?.device != null, leaseExpiresAt: row?.device?.leaseExpiresAt },
      { productIds: toProductIds(productId), requireActiveDevice: true, now },
    );
    if (!verdict.ok) return { isValid: false, reason: verdict.failure };
    this.sightings.seen(key, identifier, now);
    return { isValid: true, status: verdict.status, license: verdict.license, device: row!.device!, leaseSeconds: row!.leaseSeconds };
  }

  /**
   * A floating device's heartbeat: the validation checks (a lapsed lease is `device_not_activated`),
   * then its lease renewed to now + the product's lease length in one conditional write. On a
   * node-locked product it is a validation.
   */
  async heartbeat(rawKey: string, productId: string | string[], deviceIdentifier: string): Promise<PublicValidation> {
    const result = await this.publicValidate(rawKey, productId, deviceIdentifier);
    // Node-locked, or a device activated before its product turned floating (it holds no lease).
    if (!result.isValid || result.leaseSeconds === null || result.device.leaseExpiresAt == null) return result;
    const now = this.clock();
    const end = now + result.leaseSeconds * 1000;
    const renewed = await this.units.run((unit) => this.repo.renewLease(unit, result.license.key, result.device.identifier, now, end));
    if (!renewed) return { isValid: false, reason: 'device_not_activated' };
    return { ...result, device: { ...result.device, leaseExpiresAt: end, lastSeenAt: now } };
  }

  /** Server API: the same checks; only the product and device the caller names are asked. */
  async serverValidate(principal: Principal, key: string, query: { productId?: string; deviceIdentifier?: string }): Promise<ServerValidation> {
    const found = await this.repo.getOwnedWithFallback(principal.accountId, normalizeLicenseKey(key));
    if (!found) throw notFound('License');
    const { license, fallbackEnabled } = found;
    const identifier = query.deviceIdentifier === undefined ? undefined : cleanIdentifier(query.deviceIdentifier);
    const device = identifier === undefined ? null : (license.activeDevices.find((d) => d.identifier === identifier) ?? null);
    const now = this.clock();
    const verdict = evaluate(
      { license, fallbackEnabled, deviceActive: device !== null, leaseExpiresAt: device?.leaseExpiresAt },
      { productIds: query.productId === undefined ? undefined : [query.productId], requireActiveDevice: identifier !== undefined, now },
    );
    if (verdict.ok && device) this.sightings.seen(license.key, device.identifier, now);
    return { isValid: verdict.ok, status: verdict.status!, license, device };
  }

  /** Public device removal; removing a device that is not active is a no-op (idempotent). */
  async publicRemoveDevice(rawKey: string, productId: string | string[], deviceIdentifier: string): Promise<void> {
    const key = normalizeLicenseKey(rawKey);
    const identifier = cleanIdentifier(deviceIdentifier);
    const productIds = toProductIds(productId);
    await this.units.run(async (unit) => {
      const state = await this.repo.lock(unit, key);
      // Only "is it this product's license": a revoked or expired license may still free a slot.
      const verdict = evaluate({ license: state?.license, fallbackEnabled: state?.fallbackEnabled ?? false }, { productIds, now: this.clock() });
      if (!verdict.ok && (verdict.failure === 'not_found' || verdict.failure === 'product_mismatch')) throw failureError('not_found');
      await this.removeOne(unit, PUBLIC_ACTOR, state!, identifier);
    });
  }

  /** Removes the floating license's devices whose lease lapsed by `now`, each with its event (actor `lease`). */
  private async releaseLapsed(unit: Unit, license: FullLicenseRecord, now: number): Promise<Device[]> {
    const released = await this.repo.releaseLapsed(unit, license.key, now);
    for (const device of released) await unit.emit({ type: 'device.released', actor: LEASE_ACTOR, occurredAt: now, license: snapshot(license), device: deviceSnapshot(device) });
    return released;
  }

  private async remove(unit: Unit, actor: Actor, license: FullLicenseRecord): Promise<void> {
    const devices = await this.repo.delete(unit, license.key);
    await unit.emit({ type: 'license.deleted', actor, occurredAt: this.clock(), license: snapshot(license), devices: devices.map(deviceSnapshot) });
  }

  private async removeOne(unit: Unit, actor: Actor, { license, devices }: LockedLicense, identifier: string): Promise<Device | undefined> {
    const device = devices.find((d) => d.identifier === identifier);
    if (!device || !(await this.repo.removeDevice(unit, license.key, identifier))) return undefined;
    await unit.emit({ type: 'device.removed', actor, occurredAt: this.clock(), license: snapshot(license), device: deviceSnapshot(device) });
    return device;
  }

  private async removeAll(unit: Unit, actor: Actor, { license, devices }: LockedLicense): Promise<Device[]> {
    if (devices.length === 0) return [];
    await this.repo.removeAllDevices(unit, license.key);
    await unit.emit({ type: 'devices.reset', actor, occurredAt: this.clock(), license: snapshot(license), devices: devices.map(deviceSnapshot) });
    return devices;
  }

  /** Runs a change on one of the caller's licenses in a unit and returns the license after it. */
  private owned(principal: Principal, rawKey: string, outer: Unit | undefined, change: (unit: Unit, locked: LockedLicense) => Promise<unknown>): Promise<License> {
    const key = normalizeLicenseKey(rawKey);
    return this.units.run(async (unit) => {
      const locked = await this.repo.lock(unit, key, principal.accountId);
      if (!locked) throw notFound('License');
      await change(unit, locked);
      return (await this.repo.read(unit, key)) ?? { ...locked.license, activeDevices: [] };
    }, outer);
  }
}

import { invalidRequest } from '../../core/errors.ts';
import { type DeviceActivation, type DeviceSnapshot, type DomainEvent, eventAccountId, isLicenseEvent, type LicenseEvent, type LicenseSnapshot } from '../../core/events.ts';
import { timeOfOrderedId, timeOrderedId } from '../../core/ids.ts';
import { normalizeLicenseKey } from '../../core/license-key.ts';
import type { Actor, Principal } from '../../core/principal.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import { licenseChangesView } from '../licenses/schemas.ts';
import type { LicenseService } from '../licenses/service.ts';

export type AuditType =
  | 'license.created'
  | 'license.updated'
  | 'license.revoked'
  | 'license.deleted'
  | 'device.activated'
  | 'device.updated'
  | 'device.removed'
  | 'device.released'
  | 'devices.reset';

/** One recorded change; `changes` is already in the API's shape (times ISO), stored as JSON. */
export interface AuditEntry {
  id: string;
  accountId: string;
  licenseKey: string;
  type: AuditType;
  actor: Actor;
  changes: Record<string, unknown> | null;
  createdAt: number;
}


export const AUDIT_TYPES: readonly AuditType[] = ['license.created', 'license.updated', 'license.revoked', 'license.deleted', 'device.activated', 'device.updated', 'device.removed', 'device.released', 'devices.reset'];

/** Which entries: the whole account's, or one license key's; of every type, or one. */
export interface AuditScope {
  licenseKey?: string;
  type?: AuditType;
}

export interface AuditRepository {
  insert(unit: Unit, entry: AuditEntry): Promise<void>;
  /**
   * The account's entries in `scope`, newest first (ids sort in time order), older than `before`
   * when given: those in the log, and the activations active devices' rows hold
   * (DeviceActivation) made at `since` or later.
   */
  list(accountId: string, scope: AuditScope, options: { limit: number; before?: string; since: number }): Promise<AuditEntry[]>;
  /** Deletes entries made before `before` (epoch ms). */
  purge(before: number): Promise<number>;
}

export const AUDIT_LIMIT_DEFAULT = 50;
export const AUDIT_LIMIT_MAX = 100;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const deviceFields = (d: { identifier: string; name: string; activationDate: number }) => ({ identifier: d.identifier, name: d.name, activationDate: iso(d.activationDate) });

/** A device whose row holds its activation's entry. */
export type HeldDevice = DeviceSnapshot & { activation: DeviceActivation };

/**
 * A device.activated entry from the activation a device's row holds: what the subscriber would
 * have written when the device was activated (the name it had then; its id and time), so it reads
 * the same from the row as from the log. The repository builds held entries with it too.
 */
export function activationEntry(accountId: string, licenseKey: string, device: HeldDevice): AuditEntry {
  const { id, actor, name } = device.activation;
  return { id, accountId, licenseKey, type: 'device.activated', actor, createdAt: timeOfOrderedId(id), changes: { device: deviceFields({ ...device, name }) } };
}

/** The activations that leave their devices' rows with this change: into the log, in the same unit. */
function releasedActivations(event: LicenseEvent): HeldDevice[] {
  const devices = event.type === 'device.removed' || event.type === 'device.released' ? [event.device] : event.type === 'devices.reset' || event.type === 'license.deleted' ? event.devices : [];
  return devices.filter((d): d is HeldDevice => d.activation !== undefined);
}

/** A new license's starting values, in the shape of an update (from null). */
function createdChanges(l: LicenseSnapshot): Record<string, unknown> {
  const initial = { productId: l.productId, type: l.type, expiresAt: iso(l.expiresAt), maxDevices: l.maxDevices, email: l.email, revoked: l.revoked };
  return Object.fromEntries(Object.entries(initial).map(([field, to]) => [field, { from: null, to }]));
}

/**
 * What an event records: its type (an update that revokes is `license.revoked`) and what changed.
 * Events that are not a license change (purchases) record nothing.
 */
function entryOf(event: DomainEvent): Pick<AuditEntry, 'type' | 'changes'> | null {
  switch (event.type) {
    case 'license.created':
      return { type: event.type, changes: createdChanges(event.license) };
    case 'license.updated':
      return { type: event.changes.revoked?.to === true ? 'license.revoked' : 'license.updated', changes: licenseChangesView(event.changes) };
    case 'license.deleted':
      return { type: event.type, changes: null };
    case 'device.activated':
    case 'device.removed':
    case 'device.released':
      return { type: event.type, changes: { device: deviceFields(event.device) } };
    case 'device.updated':
      return { type: event.type, changes: { device: deviceFields(event.device), ...event.changes } };
    case 'devices.reset':
      return { type: event.type, changes: { devices: event.devices.map(deviceFields) } };
    default:
      return null;
  }
}

const encodeCursor = (e: AuditEntry): string => Buffer.from(e.id).toString('base64url');

function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString();
  if (/^[0-9a-z]{13}[A-Za-z0-9]{8}$/.test(id)) return id;
  throw invalidRequest('query.cursor', 'is not a cursor this API returned');
}

/**
 * The audit log of license changes: an in-unit subscriber records every change with its actor
 * and time in the unit that made it (so an entry exists exactly when its change committed).
 * Entries outlive a deleted license (until the retention purge): they are what an operator
 * looks at after a delete.
 */
export class AuditService {
  constructor(
    private readonly repo: AuditRepository,
    private readonly licenses: LicenseService,
    private readonly clock: () => number,
    /** AUDIT_RETENTION_DAYS in ms: how long entries are kept (and held ones shown). */
    private readonly keepMs: number,
  ) {}

  async onEvent(event: DomainEvent, unit: Unit): Promise<void> {
    if (!isLicenseEvent(event)) return;
    const accountId = eventAccountId(event);
    const licenseKey = event.license.key;
    for (const device of releasedActivations(event)) {
      // One already past the retention would only wait for the next purge.
      if (timeOfOrderedId(device.activation.id) >= event.occurredAt - this.keepMs) await this.repo.insert(unit, activationEntry(accountId, licenseKey, device));
    }
    // A new device's row holds its activation's entry until the device goes (DeviceActivation).
    if (event.type === 'device.activated' && event.device.activation) return;
    const entry = entryOf(event);
    if (!entry) return;
    await this.repo.insert(unit, { id: timeOrderedId(event.occurredAt), accountId, licenseKey, actor: event.actor, createdAt: event.occurredAt, ...entry });
  }

  /** A license's entries, newest first; 404 when the account has neither the license nor entries for it. */
  async list(principal: Principal, rawKey: string, query: { limit?: number; cursor?: string }): Promise<{ data: AuditEntry[]; nextCursor: string | null }> {
    const key = normalizeLicenseKey(rawKey);
    const limit = query.limit ?? AUDIT_LIMIT_DEFAULT;
    const page = await this.page(principal, { licenseKey: key }, { limit, cursor: query.cursor });
    if (page.data.length === 0 && !query.cursor) await this.licenses.get(principal, key); // 404 unless it is the account's
    return page;
  }

  /**
   * The account's entries, newest first, of one type or license key when asked: the account-wide
   * log. A key the account does not have finds nothing, as an unknown one does (no 404 that would
   * tell another account's keys apart).
   */
  listAccount(principal: Principal, query: { type?: AuditType; licenseKey?: string; limit?: number; cursor?: string }): Promise<{ data: AuditEntry[]; nextCursor: string | null }> {
    const licenseKey = query.licenseKey?.trim() ? normalizeLicenseKey(query.licenseKey) : undefined;
    return this.page(principal, { licenseKey, type: query.type }, { limit: query.limit ?? AUDIT_LIMIT_DEFAULT, cursor: query.cursor });
  }

  private async page(principal: Principal, scope: AuditScope, query: { limit: number; cursor?: string }): Promise<{ data: AuditEntry[]; nextCursor: string | null }> {
    const { limit } = query;
    const data = await this.repo.list(principal.accountId, scope, { limit: limit + 1, before: query.cursor ? decodeCursor(query.cursor) : undefined, since: this.clock() - this.keepMs });
    const more = data.length > limit;
    if (more) data.pop();
    return { data, nextCursor: more ? encodeCursor(data[data.length - 1]!) : null };
  }

  /** Drops the log's entries older than the retention; run by the outbox worker's housekeeping (held ones are hidden by `list`). */
  purge(now: number): Promise<number> {
    return this.repo.purge(now - this.keepMs);
  }
}

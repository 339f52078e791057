import { invalidRequest } from '../../core/errors.ts';
import { type DomainEvent, eventAccountId, type LicenseSnapshot } from '../../core/events.ts';
import { timeOrderedId } from '../../core/ids.ts';
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
  | 'device.removed'
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


export interface AuditRepository {
  insert(unit: Unit, entry: AuditEntry): Promise<void>;
  /** The account's entries for one license key, newest first (ids sort in time order), older than `before` when given. */
  list(accountId: string, licenseKey: string, options: { limit: number; before?: string }): Promise<AuditEntry[]>;
  /** Deletes entries made before `before` (epoch ms). */
  purge(before: number): Promise<number>;
}

export const AUDIT_LIMIT_DEFAULT = 50;
export const AUDIT_LIMIT_MAX = 100;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const deviceFields = (d: { identifier: string; name: string; activationDate: number }) => ({ identifier: d.identifier, name: d.name, activationDate: iso(d.activationDate) });

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
      return { type: event.type, changes: { device: deviceFields(event.device) } };
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
  ) {}

  async onEvent(event: DomainEvent, unit: Unit): Promise<void> {
    const entry = entryOf(event);
    if (!entry || !('license' in event)) return;
    await this.repo.insert(unit, { id: timeOrderedId(event.occurredAt), accountId: eventAccountId(event), licenseKey: event.license.key, actor: event.actor, createdAt: event.occurredAt, ...entry });
  }

  /** A license's entries, newest first; 404 when the account has neither the license nor entries for it. */
  async list(principal: Principal, rawKey: string, query: { limit?: number; cursor?: string }): Promise<{ data: AuditEntry[]; nextCursor: string | null }> {
    const key = normalizeLicenseKey(rawKey);
    const limit = query.limit ?? AUDIT_LIMIT_DEFAULT;
    const data = await this.repo.list(principal.accountId, key, { limit: limit + 1, before: query.cursor ? decodeCursor(query.cursor) : undefined });
    if (data.length === 0 && !query.cursor) await this.licenses.get(principal, key); // 404 unless it is the account's
    const more = data.length > limit;
    if (more) data.pop();
    return { data, nextCursor: more ? encodeCursor(data[data.length - 1]!) : null };
  }

  /** Drops entries older than `keepMs` (AUDIT_RETENTION_DAYS); run by the outbox worker's housekeeping. */
  purge(now: number, keepMs: number): Promise<number> {
    return this.repo.purge(now - keepMs);
  }
}

import { Prepared } from '../../storage/prepared.ts';
import type { Executor, SqlQuery, Store } from '../../storage/index.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import { isUniqueViolation } from '../../storage/constraint.ts';
import { AppError } from '../../core/errors.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Actor } from '../../core/principal.ts';
import { sql, type Updateable } from 'kysely';
import { bool, type DeviceRow, flag, type LicenseRow, type LicensesTable } from '../../storage/schema.ts';
import { normalizeEmail } from '../../core/email.ts';
import { encodeEntitlements } from '../../core/entitlements.ts';
import { decodeMetadata, encodeMetadata } from './metadata.ts';
import type {
  ActivationState,
  Device,
  DeviceSighting,
  FullLicenseRecord,
  License,
  LicenseFields,
  LicenseFilter,
  LicenseRepository,
  LicenseSummary,
  LicenseWithDevicePage,
  LockedLicense,
  SearchPosition,
  ValidationRow,
} from './types.ts';
import { ValidationCache } from './validation-cache.ts';
import { LicenseSearch } from './search.ts';
import { toRecord } from './license-row.ts';

const DEVICE_COLUMNS = ['identifier', 'name', 'activation_date', 'lease_expires_at', 'last_seen_at'] as const;

/** The record with its metadata: every read but the public hot path's. */
const toFull = (r: Omit<LicenseRow, 'email_normalized'>): FullLicenseRecord => ({ ...toRecord(r), metadata: decodeMetadata(r.metadata) });

const toDevice = (r: Pick<DeviceRow, (typeof DEVICE_COLUMNS)[number]>): Device => ({
  identifier: r.identifier,
  name: r.name,
  activationDate: r.activation_date,
  leaseExpiresAt: r.lease_expires_at,
  lastSeenAt: r.last_seen_at,
});

/** The order the API lists a license's devices in: by activation date, then identifier. */
const byActivation = (a: Device, b: Device): number => a.activationDate - b.activationDate || (a.identifier < b.identifier ? -1 : 1);

/** A device with the activation its row holds (see DeviceActivation): for the changes that remove devices. */
const toHeldDevice = (r: DeviceRow): Device => {
  const device = toDevice(r);
  if (r.activation_id === null || r.activated_by === null) return device;
  return { ...device, activation: { id: r.activation_id, actor: JSON.parse(r.activated_by) as Actor, name: r.activated_name ?? r.name } };
};

/** The device columns of a row: what holds a new device's activation (null for none). */
const deviceRow = (key: string, d: Device) => ({
  license_key: key,
  identifier: d.identifier,
  name: d.name,
  activation_date: d.activationDate,
  activation_id: d.activation?.id ?? null,
  activated_by: d.activation ? JSON.stringify(d.activation.actor) : null,
  lease_expires_at: d.leaseExpiresAt ?? null,
  last_seen_at: d.lastSeenAt ?? null,
});

const licenseRow = (l: FullLicenseRecord) => ({
  key: l.key,
  account_id: l.accountId,
  product_id: l.productId,
  type: l.type,
  expires_at: l.expiresAt,
  revoked: flag(l.revoked),
  email: l.email,
  email_normalized: l.email === null ? null : normalizeEmail(l.email),
  max_devices: l.maxDevices,
  created_at: l.createdAt,
  entitlements: encodeEntitlements(l.entitlements),
  metadata: encodeMetadata(l.metadata),
  trial: flag(l.trial),
});

/** Rows per multi-row insert: 10 columns × 200 stays far below every store's parameter limit. */
const INSERT_CHUNK = 200;

function* chunks<T>(items: T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

const LICENSE_COLUMNS = [
  'l.key',
  'l.account_id',
  'l.product_id',
  'l.type',
  'l.expires_at',
  'l.revoked',
  'l.email',
  'l.email_normalized',
  'l.max_devices',
  'l.created_at',
  'l.entitlements',
  'l.metadata',
  'l.trial',
] as const;

/**
 * What the public hot path builds a LicenseRecord from: email_normalized serves searches only, metadata
 * server views only (and each column read costs the hot path).
 */
const RECORD_COLUMNS = LICENSE_COLUMNS.filter((c): c is Exclude<(typeof LICENSE_COLUMNS)[number], 'l.email_normalized' | 'l.metadata'> => c !== 'l.email_normalized' && c !== 'l.metadata');

/** What the checks need of the product, read with its license. */
const PRODUCT_COLUMNS = ['p.fallback_enabled', 'p.floating_enabled', 'p.lease_seconds'] as const;
type ProductPart = { fallback_enabled: number | boolean; floating_enabled: number | boolean; lease_seconds: number };
type LockRow = LicenseRow & ProductPart;
type DevicePart = { device_name: string | null; device_activation_date: number | null; device_lease_expires_at: number | null };
type ValidationSelect = Omit<LicenseRow, 'email_normalized' | 'metadata'> & ProductPart & DevicePart;
type ActivationDeviceRow = DevicePart & { device_count: number | string | bigint };

/** The product's lease length when it is floating, else null (node-locked). */
const leaseSecondsOf = (r: ProductPart): number | null => (bool(r.floating_enabled) ? r.lease_seconds : null);

/** The asking device from a row's `device_*` columns, or null when it is not on the license. */
const askingDevice = (r: DevicePart, identifier: string): Device | null =>
  r.device_name === null ? null : { identifier, name: r.device_name, activationDate: r.device_activation_date!, leaseExpiresAt: r.device_lease_expires_at };

/**
 * Statements on the hot paths (validate, activate), built and compiled once per store. Exported
 * for the benchmark's reference route, which runs the validation statement with no service around it.
 */
export function licenseStatements(store: Pick<Store, 'db' | 'lockRows'>) {
  const db = store.db;
  const withFallback = (key: string) =>
    db.selectFrom('licenses as l').innerJoin('products as p', 'p.id', 'l.product_id').select([...LICENSE_COLUMNS, ...PRODUCT_COLUMNS]).where('l.key', '=', key);
  // Lock the license row only: activations of other licenses of the product go on in parallel.
  const lockQuery = (key: string) => withFallback(key).$if(store.lockRows, (q) => q.forUpdate('l'));
  /**
   * Activation's read once the license is locked: the asking device by primary key and the device
   * count from the primary key's range (license_key is its first column), so an activation on a
   * license with 10,000 devices reads no device row but its own. A statement of its own, after the
   * lock: on PostgreSQL it then sees every device committed before the lock was granted. Where rows
   * are not locked (SQLite, whose write batch runs one unit at a time), the same columns join the
   * lock's read instead (`activationState`): one statement per activation instead of two.
   */
  const activationDevice = (key: string, identifier: string) =>
    db
      .selectFrom('licenses as l')
      .leftJoin('devices as d', (join) => join.onRef('d.license_key', '=', 'l.key').on('d.identifier', '=', identifier))
      .select((eb) => [
        'd.name as device_name',
        'd.activation_date as device_activation_date',
        'd.lease_expires_at as device_lease_expires_at',
        eb.selectFrom('devices as c').select(eb.fn.countAll().as('n')).whereRef('c.license_key', '=', 'l.key').as('device_count'),
      ])
      .where('l.key', '=', key);
  const activationState = (key: string, identifier: string) =>
    activationDevice(key, identifier).innerJoin('products as p', 'p.id', 'l.product_id').select([...LICENSE_COLUMNS, ...PRODUCT_COLUMNS]);
  return {
    activationDevice: new Prepared<{ key: string; identifier: string }, ActivationDeviceRow>((p) => activationDevice(p('key'), p('identifier'))),
    activationState: new Prepared<{ key: string; identifier: string }, LockRow & ActivationDeviceRow>((p) => activationState(p('key'), p('identifier'))),
    activationStateOwned: new Prepared<{ key: string; identifier: string; account: string }, LockRow & ActivationDeviceRow>((p) =>
      activationState(p('key'), p('identifier')).where('l.account_id', '=', p('account')),
    ),
    validation: new Prepared<{ key: string; identifier: string }, ValidationSelect>((p) =>
      db
        .selectFrom('licenses as l')
        .innerJoin('products as p', 'p.id', 'l.product_id')
        .leftJoin('devices as d', (join) => join.onRef('d.license_key', '=', 'l.key').on('d.identifier', '=', p('identifier')))
        .select([...RECORD_COLUMNS, ...PRODUCT_COLUMNS, 'd.name as device_name', 'd.activation_date as device_activation_date', 'd.lease_expires_at as device_lease_expires_at'])
        .where('l.key', '=', p('key')),
    ),
    lock: new Prepared<{ key: string }, LockRow>((p) => lockQuery(p('key'))),
    lockOwned: new Prepared<{ key: string; account: string }, LockRow>((p) => lockQuery(p('key')).where('l.account_id', '=', p('account'))),
    withFallbackOwned: new Prepared<{ key: string; account: string }, LockRow>((p) => withFallback(p('key')).where('l.account_id', '=', p('account'))),
    license: new Prepared<{ key: string }, LicenseRow>((p) => db.selectFrom('licenses').selectAll().where('key', '=', p('key'))),
    licenseOwned: new Prepared<{ key: string; account: string }, LicenseRow>((p) =>
      db.selectFrom('licenses').selectAll().where('key', '=', p('key')).where('account_id', '=', p('account')),
    ),
    devices: new Prepared<{ key: string }, Pick<DeviceRow, (typeof DEVICE_COLUMNS)[number]>>((p) =>
      db.selectFrom('devices').select(DEVICE_COLUMNS).where('license_key', '=', p('key')).orderBy('activation_date').orderBy('identifier'),
    ),
    deviceCount: new Prepared<{ key: string }, { n: number | string }>((p) =>
      db
        .selectFrom('devices')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('license_key', '=', p('key')),
    ),
    heldDevices: new Prepared<{ key: string }, DeviceRow>((p) =>
      db.selectFrom('devices').selectAll().where('license_key', '=', p('key')).orderBy('activation_date').orderBy('identifier'),
    ),
    addDevice: new Prepared<{ key: string; identifier: string; name: string; at: number; activation: string | null; by: string | null; lease: number | null }, never>((p) =>
      db.insertInto('devices').values({
        license_key: p('key'),
        identifier: p('identifier'),
        name: p('name'),
        activation_date: p('at'),
        activation_id: p('activation'),
        activated_by: p('by'),
        lease_expires_at: p('lease'),
        last_seen_at: p('at'),
      }),
    ),
    touchDevice: new Prepared<{ key: string; identifier: string; at: number }, never>((p) =>
      db
        .updateTable('devices')
        .set({ last_seen_at: p('at') })
        .where('license_key', '=', p('key'))
        .where('identifier', '=', p('identifier'))
        .where((eb) => eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '<', p('at'))])),
    ),
    // Only a live lease is renewed: one that lapsed meanwhile (and may be released by an activation) stays lapsed.
    renewLease: new Prepared<{ key: string; identifier: string; now: number; end: number }, never>((p) =>
      db
        .updateTable('devices')
        .set({ lease_expires_at: p('end'), last_seen_at: p('now') })
        .where('license_key', '=', p('key'))
        .where('identifier', '=', p('identifier'))
        .where('lease_expires_at', '>', p('now')),
    ),
    // SET reads the row as it was: the first rename keeps the name the activation's entry shows.
    renameDevice: new Prepared<{ key: string; identifier: string; name: string }, never>((p) =>
      db
        .updateTable('devices')
        .set((eb) => ({ name: p('name'), activated_name: eb.fn.coalesce('activated_name', 'name') }))
        .where('license_key', '=', p('key'))
        .where('identifier', '=', p('identifier')),
    ),
  };
}

type Statements = ReturnType<typeof licenseStatements>;

/**
 * PostgreSQL: a batch of sightings in one statement, where one update per device cost a round trip
 * each (500 per unit, 200 units a minute for 100,000 devices). Sorted by device, so concurrent
 * flushes of two processes take their row locks in one order rather than deadlocking.
 */
function touchDevicesAtOnce(sightings: DeviceSighting[]): SqlQuery {
  const sorted = [...sightings].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0));
  return {
    sql:
      'update devices as d set last_seen_at = s.at' +
      ' from unnest($1::text[], $2::text[], $3::bigint[]) as s(license_key, identifier, at)' +
      ' where d.license_key = s.license_key and d.identifier = s.identifier and (d.last_seen_at is null or d.last_seen_at < s.at)',
    parameters: [sorted.map((s) => s.key), sorted.map((s) => s.identifier), sorted.map((s) => s.at)],
  };
}

function activationStateOf(locked: LockRow, row: ActivationDeviceRow, identifier: string): ActivationState {
  return {
    license: toFull(locked),
    fallbackEnabled: bool(locked.fallback_enabled),
    leaseSeconds: leaseSecondsOf(locked),
    device: askingDevice(row, identifier),
    deviceCount: Number(row.device_count),
  };
}

async function readLicense(ex: Executor, q: Statements, key: string, account?: string): Promise<License | undefined> {
  const row = await ex.first(account === undefined ? q.license.bind({ key }) : q.licenseOwned.bind({ key, account }));
  if (!row) return undefined;
  const devices = await ex.all(q.devices.bind({ key }));
  return { ...toFull(row), activeDevices: devices.map(toDevice) };
}

export class SqlLicenseRepository implements LicenseRepository {
  private readonly q: Statements;
  private readonly someDevicesReads = new Map<number, Prepared<{ key: string }, Pick<DeviceRow, (typeof DEVICE_COLUMNS)[number]>>>();


  /** PostgreSQL: validation rows kept between requests (validation-cache.ts); none on SQLite, whose lookups are local. */
  readonly validationCache: ValidationCache | undefined;

  /** The dashboard's search and count (search.ts). */
  readonly searching: LicenseSearch;

  constructor(
    private readonly store: Store,
    options: { validationCacheEntries?: number; walkRows?: number } = {},
  ) {
    this.q = licenseStatements(store);
    this.searching = new LicenseSearch(store, options.walkRows);
    const entries = options.validationCacheEntries ?? 0;
    this.validationCache = store.changes && entries > 0 ? new ValidationCache(store.changes, entries) : undefined;
  }

  private get db() {
    return this.store.db;
  }

  async insert(unit: Unit, l: FullLicenseRecord): Promise<void> {
    await executorOf(unit).run(this.db.insertInto('licenses').values(licenseRow(l)));
  }

  async insertMany(unit: Unit, licenses: License[]): Promise<void> {
    const tx = executorOf(unit);
    // Chunks keep each statement under SQLite's and PostgreSQL's bound-parameter limits.
    for (const chunk of chunks(licenses, INSERT_CHUNK)) {
      try {
        await tx.run(this.db.insertInto('licenses').values(chunk.map(licenseRow)));
      } catch (error) {
        // PostgreSQL: a key checked as free in this unit was inserted by another one meanwhile.
        if (!isUniqueViolation(error)) throw error;
        throw new AppError('invalid_request', 'A license of this batch was created meanwhile, by another import or request; run the import again: it skips the licenses already there.');
      }
    }
    const devices = licenses.flatMap((l) => l.activeDevices.map((d) => deviceRow(l.key, d)));
    for (const chunk of chunks(devices, INSERT_CHUNK)) await tx.run(this.db.insertInto('devices').values(chunk));
  }

  async ownersOf(keys: string[], unit?: Unit): Promise<Map<string, string>> {
    const owners = new Map<string, string>();
    const ex = readerOf(this.store, unit);
    for (const chunk of chunks(keys, 500)) {
      for (const row of await ex.all(this.db.selectFrom('licenses').select(['key', 'account_id']).where('key', 'in', chunk))) owners.set(row.key, row.account_id);
    }
    return owners;
  }

  getOwned(accountId: string, key: string, unit?: Unit): Promise<License | undefined> {
    return readLicense(readerOf(this.store, unit), this.q, key, accountId);
  }

  async getOwnedWithDevicePage(accountId: string, key: string, offset: number, limit: number): Promise<LicenseWithDevicePage | undefined> {
    const row = await this.store.read.first(this.q.licenseOwned.bind({ key, account: accountId }));
    if (!row) return undefined;
    const rows = await this.store.read.all(
      this.db.selectFrom('devices').select(DEVICE_COLUMNS).where('license_key', '=', key).orderBy('activation_date').orderBy('identifier').limit(limit).offset(offset),
    );
    const complete = offset === 0 && rows.length < limit;
    const total = complete ? rows.length : Number((await this.store.read.first(this.q.deviceCount.bind({ key })))!.n);
    return { license: toFull(row), devices: rows.map(toDevice), total };
  }

  async getOwnedWithFallback(accountId: string, key: string): Promise<{ license: License; fallbackEnabled: boolean } | undefined> {
    const row = await this.store.read.first(this.q.withFallbackOwned.bind({ key, account: accountId }));
    if (!row) return undefined;
    const devices = await this.store.read.all(this.q.devices.bind({ key }));
    return { license: { ...toFull(row), activeDevices: devices.map(toDevice) }, fallbackEnabled: bool(row.fallback_enabled) };
  }

  findForValidation(key: string, identifier: string): Promise<ValidationRow | undefined> {
    const cache = this.validationCache;
    return cache ? cache.read(key, identifier, () => this.readValidation(key, identifier)) : this.readValidation(key, identifier);
  }

  private async readValidation(key: string, identifier: string): Promise<ValidationRow | undefined> {
    const row = await this.store.read.first(this.q.validation.bind({ key, identifier }));
    if (!row) return undefined;
    return {
      license: toRecord(row),
      fallbackEnabled: bool(row.fallback_enabled),
      leaseSeconds: leaseSecondsOf(row),
      device: askingDevice(row, identifier),
    };
  }

  async listByProduct(accountId: string, productId: string, o: { email?: string; limit: number; after?: { createdAt: number; key: string } }): Promise<License[]> {
    const rows = await this.store.read.all(
      this.db
        .selectFrom('licenses')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('product_id', '=', productId)
        .$if(o.email !== undefined, (q) => q.where('email_normalized', '=', o.email!))
        .$if(o.after !== undefined, (q) =>
          q.where((eb) =>
            eb.or([
              eb('created_at', '>', o.after!.createdAt),
              eb.and([eb('created_at', '=', o.after!.createdAt), eb('key', '>', o.after!.key)]),
            ]),
          ),
        )
        .orderBy('created_at')
        .orderBy('key')
        .limit(o.limit),
    );
    if (rows.length === 0) return [];
    const devices = await this.store.read.all(
      this.db
        .selectFrom('devices')
        .selectAll()
        .where(
          'license_key',
          'in',
          rows.map((r) => r.key),
        )
        .orderBy('activation_date')
        .orderBy('identifier'),
    );
    const byKey = new Map<string, Device[]>();
    for (const d of devices) {
      const list = byKey.get(d.license_key) ?? [];
      list.push(toDevice(d));
      byKey.set(d.license_key, list);
    }
    return rows.map((r) => ({ ...toFull(r), activeDevices: byKey.get(r.key) ?? [] }));
  }

  search(accountId: string, f: LicenseFilter, now: number, o: { limit: number; after?: SearchPosition; before?: SearchPosition }): Promise<LicenseSummary[]> {
    return this.searching.search(accountId, f, now, o);
  }

  countMatches(accountId: string, f: LicenseFilter, now: number, cap: number): Promise<number> {
    return this.searching.countMatches(accountId, f, now, cap);
  }

  async listRecordsByProduct(unit: Unit, accountId: string, productId: string): Promise<FullLicenseRecord[]> {
    const rows = await executorOf(unit).all(
      this.db.selectFrom('licenses').selectAll().where('account_id', '=', accountId).where('product_id', '=', productId).orderBy('created_at').orderBy('key'),
    );
    return rows.map(toFull);
  }

  async lock(unit: Unit, key: string, account?: string): Promise<LockedLicense | undefined> {
    const tx = executorOf(unit);
    const row = await tx.first(account === undefined ? this.q.lock.bind({ key }) : this.q.lockOwned.bind({ key, account }));
    if (!row) return undefined;
    const devices = (await tx.all(this.q.heldDevices.bind({ key }))).map(toHeldDevice);
    return { license: toFull(row), fallbackEnabled: bool(row.fallback_enabled), devices };
  }

  async lockForActivation(unit: Unit, key: string, identifier: string, account?: string): Promise<ActivationState | undefined> {
    const tx = executorOf(unit);
    if (!this.store.lockRows) {
      const row = await tx.first(account === undefined ? this.q.activationState.bind({ key, identifier }) : this.q.activationStateOwned.bind({ key, identifier, account }));
      return row && activationStateOf(row, row, identifier);
    }
    const locked = await tx.first(account === undefined ? this.q.lock.bind({ key }) : this.q.lockOwned.bind({ key, account }));
    if (!locked) return undefined;
    return activationStateOf(locked, (await tx.first(this.q.activationDevice.bind({ key, identifier })))!, identifier);
  }

  read(unit: Unit, key: string): Promise<License | undefined> {
    return readLicense(executorOf(unit), this.q, key);
  }

  async update(unit: Unit, key: string, f: LicenseFields): Promise<void> {
    const set: Updateable<LicensesTable> = {};
    if (f.productId !== undefined) set.product_id = f.productId;
    if (f.type !== undefined) set.type = f.type;
    if (f.expiresAt !== undefined) set.expires_at = f.expiresAt;
    if (f.revoked !== undefined) set.revoked = flag(f.revoked);
    if (f.maxDevices !== undefined) set.max_devices = f.maxDevices;
    if (f.email !== undefined) {
      set.email = f.email;
      set.email_normalized = f.email === null ? null : normalizeEmail(f.email);
    }
    if (f.entitlements !== undefined) set.entitlements = encodeEntitlements(f.entitlements);
    if (f.metadata !== undefined) set.metadata = encodeMetadata(f.metadata);
    if (Object.keys(set).length === 0) return;
    await executorOf(unit).run(this.db.updateTable('licenses').set(set).where('key', '=', key));
  }

  async rekey(unit: Unit, oldKey: string, newKey: string): Promise<void> {
    const tx = executorOf(unit);
    const row = await tx.first(this.db.selectFrom('licenses').selectAll().where('key', '=', oldKey));
    if (!row) return;
    // A new row first (the key is the primary key others refer to), then everything that names it, then the old row.
    await tx.run(this.db.insertInto('licenses').values({ ...row, key: newKey, revoked: flag(bool(row.revoked)), trial: flag(bool(row.trial)) }));
    for (const table of ['devices', 'portal_device_resets', 'purchase_licenses', 'audit_events', 'trials', 'license_subscriptions'] as const) {
      await tx.run(this.db.updateTable(table).set({ license_key: newKey }).where('license_key', '=', oldKey));
    }
    await tx.run(this.db.deleteFrom('licenses').where('key', '=', oldKey));
  }

  async delete(unit: Unit, key: string): Promise<Device[]> {
    const tx = executorOf(unit);
    // The devices first, for the activations their rows hold; portal reset records go with the license (ON DELETE CASCADE).
    const devices = await tx.all(this.db.deleteFrom('devices').where('license_key', '=', key).returningAll());
    await tx.run(this.db.deleteFrom('licenses').where('key', '=', key));
    return devices.map(toHeldDevice).sort(byActivation);
  }

  /**
   * In the primary key's order, so a sample of a license's devices reads that many index entries,
   * not all of them. The limit is written into the statement (one per limit asked): SQLite ran the
   * same read 3.5 µs slower with the limit as a parameter.
   */
  private someDevicesRead(limit: number) {
    let read = this.someDevicesReads.get(limit);
    if (!read) {
      read = new Prepared<{ key: string }, Pick<DeviceRow, (typeof DEVICE_COLUMNS)[number]>>((p) =>
        this.db.selectFrom('devices').select(DEVICE_COLUMNS).where('license_key', '=', p('key')).orderBy('identifier').limit(sql.lit(limit)),
      );
      this.someDevicesReads.set(limit, read);
    }
    return read;
  }

  async someDevices(unit: Unit, key: string, limit: number): Promise<{ devices: Device[]; count: number }> {
    const tx = executorOf(unit);
    const rows = await tx.all(this.someDevicesRead(limit + 1).bind({ key }));
    if (rows.length <= limit) return { devices: rows.map(toDevice).sort(byActivation), count: rows.length };
    const counted = await tx.first(this.q.deviceCount.bind({ key }));
    return { devices: rows.slice(0, limit).map(toDevice).sort(byActivation), count: Number(counted!.n) };
  }

  async addDevice(unit: Unit, key: string, d: Device): Promise<void> {
    const row = deviceRow(key, d);
    await executorOf(unit).run(
      this.q.addDevice.bind({ key, identifier: d.identifier, name: d.name, at: d.activationDate, activation: row.activation_id, by: row.activated_by, lease: row.lease_expires_at }),
    );
  }

  async renewLease(unit: Unit, key: string, identifier: string, now: number, end: number): Promise<boolean> {
    return (await executorOf(unit).run(this.q.renewLease.bind({ key, identifier, now, end }))) > 0;
  }

  async touchDevices(unit: Unit, sightings: DeviceSighting[]): Promise<void> {
    const tx = executorOf(unit);
    if (this.store.dialect === 'postgres') return void (await tx.run(touchDevicesAtOnce(sightings)));
    for (const s of sightings) await tx.run(this.q.touchDevice.bind({ key: s.key, identifier: s.identifier, at: s.at }));
  }

  async releaseLapsed(unit: Unit, key: string, now: number): Promise<Device[]> {
    const rows = await executorOf(unit).all(this.db.deleteFrom('devices').where('license_key', '=', key).where('lease_expires_at', '<=', now).returningAll());
    return rows.map(toHeldDevice).sort(byActivation);
  }

  async renameDevice(unit: Unit, key: string, identifier: string, name: string): Promise<void> {
    await executorOf(unit).run(this.q.renameDevice.bind({ key, identifier, name }));
  }

  async removeDevice(unit: Unit, key: string, identifier: string): Promise<boolean> {
    return (await executorOf(unit).run(this.db.deleteFrom('devices').where('license_key', '=', key).where('identifier', '=', identifier))) > 0;
  }

  async removeAllDevices(unit: Unit, key: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('devices').where('license_key', '=', key));
  }
}

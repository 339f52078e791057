import { Prepared } from '../../storage/prepared.ts';
import type { Executor, Store } from '../../storage/index.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import { isUniqueViolation } from '../../storage/constraint.ts';
import { AppError } from '../../core/errors.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Actor } from '../../core/principal.ts';
import { type SelectQueryBuilder, sql, type Updateable } from 'kysely';
import { bool, type Database, type DeviceRow, flag, type LicenseRow, type LicensesTable } from '../../storage/schema.ts';
import { normalizeEmail } from '../../core/email.ts';
import { containsPattern } from '../../storage/like.ts';
import { decodeEntitlements, encodeEntitlements } from '../../core/entitlements.ts';
import { decodeMetadata, encodeMetadata } from './metadata.ts';
import type {
  ActivationState,
  Device,
  DeviceSighting,
  FullLicenseRecord,
  License,
  LicenseFields,
  LicenseFilter,
  LicenseRecord,
  LicenseRepository,
  LicenseSummary,
  LicenseWithDevicePage,
  LockedLicense,
  SearchPosition,
  ValidationRow,
} from './types.ts';
import { ValidationCache } from './validation-cache.ts';

const DEVICE_COLUMNS = ['identifier', 'name', 'activation_date', 'lease_expires_at', 'last_seen_at'] as const;

/**
 * The order a filter pages in, each served by an index of migration 006 so a page reads about
 * `limit` index entries whatever the account's size: a key prefix in key order (account_id, key);
 * expired licenses by expiry, newest first (account_id, revoked, expires_at, key); everything else
 * by creation, newest first unless asked oldest first (account_id, created_at, key), or
 * (account_id, revoked, created_at, key) for a status, or (account_id, email_normalized, created_at,
 * key) for an address. Read backwards for a previous page.
 */
export function searchOrder(filter: LicenseFilter): 'key' | 'expires_at' | 'created_at' {
  if (filter.status === 'expired') return 'expires_at';
  return filter.keyPrefix !== undefined || filter.sort === 'key' ? 'key' : 'created_at';
}

/** Whether the order runs down (newest first). */
const descending = (filter: LicenseFilter): boolean => {
  const order = searchOrder(filter);
  return order === 'expires_at' || (order === 'created_at' && filter.sort !== 'oldest');
};

const toRecord = (r: Omit<LicenseRow, 'email_normalized' | 'metadata'>): LicenseRecord => ({
  key: r.key,
  accountId: r.account_id,
  productId: r.product_id,
  type: r.type,
  expiresAt: r.expires_at,
  revoked: bool(r.revoked),
  email: r.email,
  maxDevices: r.max_devices,
  createdAt: r.created_at,
  entitlements: decodeEntitlements(r.entitlements),
  trial: bool(r.trial),
});

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

/** A page's bounds: its size, and the cursor it starts after (next) or before (previous). */
type PageOptions = { limit: number; after?: SearchPosition; before?: SearchPosition };

/**
 * How a page's piece of text is matched: `walk`: tested row by row along the order's index from the
 * cursor, up to `bound` (the last row of the window, included) when given; `ids`: the search side
 * rows SQLite's FTS5 index found (`fewMatchIds`); neither: through the trigram index.
 */
type TextPath = { walk?: { bound?: SearchPosition }; ids?: readonly number[] };

/** Rows a search by a piece of text walks in order before turning to the trigram index: see `search` (measured in docs/decisions/license-search.md). */
const WALK_ROWS = 1000;

/** The page a window of `walkRows` is for: the dashboard's 50 rows and the one past them. */
const WALK_PAGE = 51;

/**
 * How many windows' worth of rows a walk may add when its first window held some matches, too few
 * for the page (`walkPage`): pieces in more than about one license in WALK_GROWTH × 20 fill a page
 * in the walk.
 */
const WALK_GROWTH = 8;

/**
 * How many times the capped count's rows a dense piece's count may read along the key's index
 * (`countByWalk`): it walks when one row in COUNT_WINDOW or more matches.
 */
const COUNT_WINDOW = 8;

/** Which way a page reads its order's index: a previous page reads it backwards from its cursor (the caller turns it round). */
function pageDirection(f: LicenseFilter, o: Pick<PageOptions, 'after' | 'before'>): { direction: 'asc' | 'desc'; past: '<' | '>' } {
  const down = descending(f) !== (o.before !== undefined);
  return { direction: down ? 'desc' : 'asc', past: down ? '<' : '>' };
}

/**
 * Rows past `position` in the order's index. A row-value comparison: both stores use it as the index
 * range's bound (an OR of the two columns is only a filter, which makes page n read every row before it).
 */
function fromCursor<Q extends SelectQueryBuilder<Database, 'licenses', any>>(q: Q, order: ReturnType<typeof searchOrder>, op: '<' | '>' | '<=' | '>=', position: SearchPosition | undefined): Q {
  if (position === undefined) return q;
  if (order === 'key') return q.where('key', op, position.key) as Q;
  return q.where((eb) => eb(eb.refTuple(order, 'key'), op, eb.tuple(position.sort!, position.key))) as Q;
}

/** `piece` as an FTS5 phrase: with the trigram tokenizer, any text containing it (no wildcards). */
const ftsPhrase = (piece: string): string => `"${piece.replace(/"/g, '""')}"`;

/** Rows in the order's index order (read backwards with `desc` where the order runs up). */
function inOrder<Q extends SelectQueryBuilder<Database, 'licenses', any>>(q: Q, order: ReturnType<typeof searchOrder>, direction: 'asc' | 'desc'): Q {
  return (order === 'key' ? q.orderBy('key', direction) : q.orderBy(order, direction).orderBy('key', direction)) as Q;
}

export class SqlLicenseRepository implements LicenseRepository {
  private readonly q: Statements;
  private readonly someDevicesReads = new Map<number, Prepared<{ key: string }, Pick<DeviceRow, (typeof DEVICE_COLUMNS)[number]>>>();

  /** Rows of the order's index a search by a piece of text walks before turning to the trigram index (`search`). */
  private readonly walkRows: number;
  /** SQLite's FTS5 reads of a piece's few matches in flight, shared by concurrent callers (`fewMatchIds`). */
  private readonly idReads = new Map<string, Promise<readonly number[] | undefined>>();

  /** PostgreSQL: validation rows kept between requests (validation-cache.ts); none on SQLite, whose lookups are local. */
  readonly validationCache: ValidationCache | undefined;

  constructor(
    private readonly store: Store,
    options: { validationCacheEntries?: number; walkRows?: number } = {},
  ) {
    this.q = licenseStatements(store);
    this.walkRows = options.walkRows ?? WALK_ROWS;
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

  /**
   * The licenses the filter matches, unordered and unbounded (the page and the count add theirs). A
   * piece of text is matched through its trigram index (`byIndex`: the matches drive) or row by row
   * (`walk`: along the order's index, see `search`).
   */
  private matching(accountId: string, f: LicenseFilter, now: number, from: { expiredFromNow: boolean; text?: 'byIndex' | 'walk'; ids?: readonly number[] }) {
    const text = f.contains === undefined ? undefined : (from.text ?? 'byIndex');
    // With the matches driving, SQLite would otherwise walk the account's whole created_at index (to
    // skip the sort) probing each row against them; the unary + keeps it off that index, so it reads
    // the matches by primary key and sorts only those.
    const drivenByText = text === 'byIndex' && this.store.dialect === 'sqlite';
    return this.db
      .selectFrom(text === 'byIndex' && this.store.dialect === 'postgres' ? this.pgContaining(f.contains!).as('licenses') : 'licenses')
      .$if(!drivenByText, (q) => q.where('account_id', '=', accountId))
      .$if(drivenByText, (q) => q.where(sql<string>`+account_id`, '=', accountId))
      .$if(f.productId !== undefined, (q) => q.where('product_id', '=', f.productId!))
      .$if(f.email !== undefined, (q) => q.where('email_normalized', '=', f.email!))
      // The prefix as a key range: an index range scan on both stores (keys are ASCII; the column compares bytewise).
      .$if(f.keyPrefix !== undefined, (q) => q.where('key', '>=', f.keyPrefix!).where('key', '<', `${f.keyPrefix!}\u007f`))
      .$if(text === 'byIndex' && this.store.dialect === 'sqlite', (q) => q.where('key', 'in', this.sqliteContaining(f.contains!, from.ids)))
      .$if(text === 'walk', (q) => q.where(this.rowContains(f.contains!)))
      .$if(f.status === 'revoked', (q) => q.where('revoked', '=', flag(true)))
      .$if(f.status === 'active', (q) =>
        q.where('revoked', '=', flag(false)).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])),
      )
      .$if(f.status === 'expired', (q) => q.where('revoked', '=', flag(false)))
      .$if(f.status === 'expired' && from.expiredFromNow, (q) => q.where('expires_at', '<=', now));
  }

  /**
   * SQLite: the keys of licenses whose address or key, or one of whose devices' identifier or name,
   * contains `piece` (lower-case), through migration 029's FTS5 trigram table or the side rows it has
   * already found (`ids`). Any account's: the caller's `account_id` condition keeps the tenant's own.
   */
  private sqliteContaining(piece: string, ids?: readonly number[]) {
    // A quoted phrase: with the trigram tokenizer, any row containing the text (no wildcards; a LIKE
    // would need an ESCAPE clause for % and _, and FTS5 then leaves its index unused). Found ids
    // travel as one JSON parameter: one statement text whatever their number.
    const indexed = ids ? sql`SELECT value FROM json_each(${JSON.stringify(ids)})` : sql`SELECT rowid FROM license_search_fts WHERE license_search_fts MATCH ${ftsPhrase(piece)}`;
    // The index holds the rows up to the watermark (the indexer adds the rest in batches); the few
    // rows past it are read directly. A deleted row's entry may linger in the index until the
    // indexer takes it out: the join on license_search drops it (ids are never reused).
    return sql<string>`(SELECT license_key FROM license_search WHERE id IN (${indexed})
      UNION ALL SELECT license_key FROM license_search WHERE id > (SELECT indexed_through FROM license_search_state WHERE k = 0) AND instr(lower(body), ${piece}) > 0)`;
  }

  /**
   * PostgreSQL: the license rows whose address or key, or one of whose devices' identifier or name,
   * contains `piece` (lower-case), through its pg_trgm GIN indexes; the caller's conditions (the
   * account's first) are pushed into both branches. Rows, not keys to join back: with tens of
   * thousands of matches, a join on their keys made PostgreSQL read the whole table (a hash join
   * over a scan of 1,000,000 rows: 360 ms for a count of "ustomer12" at 2 % of them). The branches
   * are disjoint (the second only where the first does not match), so no row comes twice.
   */
  private pgContaining(piece: string) {
    const pattern = containsPattern(piece);
    // The first branch's condition as its trigram indexes serve it; the second's negation of it
    // counts a missing address as not matching (NOT of a NULL would drop the row).
    return sql<LicenseRow>`(SELECT * FROM licenses WHERE email_normalized LIKE ${pattern} ESCAPE '\\' OR key ILIKE ${pattern} ESCAPE '\\'
      UNION ALL SELECT * FROM licenses WHERE key IN (SELECT license_key FROM devices WHERE lower(identifier) LIKE ${pattern} ESCAPE '\\' OR lower(name) LIKE ${pattern} ESCAPE '\\')
        AND NOT (coalesce(email_normalized LIKE ${pattern} ESCAPE '\\', false) OR key ILIKE ${pattern} ESCAPE '\\'))`;
  }

  /**
   * Whether this license row's address or key, or one of its devices' identifier or name, contains
   * `piece` (lower-case): the same rule as `containing`, tested on one row (a dense search's walk).
   */
  private rowContains(piece: string) {
    if (this.store.dialect === 'sqlite') {
      // instr, not LIKE: no wildcard characters to escape. lower() folds ASCII only, as the rows past
      // the FTS5 index's watermark are read (`containing`).
      return sql<boolean>`(instr(coalesce(licenses.email_normalized, ''), ${piece}) > 0 OR instr(lower(licenses.key), ${piece}) > 0
        OR EXISTS (SELECT 1 FROM devices d WHERE d.license_key = licenses.key AND (instr(lower(d.identifier), ${piece}) > 0 OR instr(lower(d.name), ${piece}) > 0)))`;
    }
    const pattern = containsPattern(piece);
    return sql<boolean>`(licenses.email_normalized LIKE ${pattern} ESCAPE '\\' OR licenses.key ILIKE ${pattern} ESCAPE '\\'
      OR EXISTS (SELECT 1 FROM devices d WHERE d.license_key = licenses.key AND (lower(d.identifier) LIKE ${pattern} ESCAPE '\\' OR lower(d.name) LIKE ${pattern} ESCAPE '\\')))`;
  }

  /** The statement of one search page (the benchmark and the plan test read it too), its text matched as `TextPath` says. */
  searchQuery(accountId: string, f: LicenseFilter, now: number, o: PageOptions & TextPath) {
    const order = searchOrder(f);
    const { direction, past } = pageDirection(f, o);
    const byIndex = f.contains !== undefined && o.walk === undefined;
    const bound = o.walk?.bound;
    return (
      this.matching(accountId, f, now, { expiredFromNow: o.after === undefined, text: byIndex ? 'byIndex' : 'walk', ids: o.ids })
        .selectAll()
        // Each row's device count in the same statement: one probe of the devices' primary key per row.
        .select((eb) => eb.selectFrom('devices').select(eb.fn.countAll<number>().as('n')).whereRef('devices.license_key', '=', 'licenses.key').as('device_count'))
        .$call((q) => fromCursor(q, order, past, o.before ?? o.after))
        .$if(bound !== undefined, (q) => fromCursor(q, order, past === '<' ? '>=' : '<=', bound))
        // With the matches driving, ordering by an expression keeps PostgreSQL off the account's
        // ordered index too (it would walk it probing each row against the matches): only the
        // matches are sorted.
        .$if(byIndex, (q) =>
          order === 'key' ? q.orderBy(sql`key || ''`, direction) : q.orderBy(sql`${sql.ref(order)} + 0`, direction).orderBy(sql`key || ''`, direction),
        )
        .$if(!byIndex, (q) => inOrder(q, order, direction))
        .limit(o.limit)
    );
  }

  /**
   * The last row of the window a dense search walks: the `rows`-th row of the order's index from
   * the cursor, the text aside (an index-only read of that many entries), or undefined when fewer
   * rows are left.
   */
  private async walkBound(accountId: string, f: LicenseFilter, now: number, o: Pick<PageOptions, 'after' | 'before'>, rows: number): Promise<SearchPosition | undefined> {
    const order = searchOrder(f);
    const { direction, past } = pageDirection(f, o);
    const row = await this.store.read.first(
      this.matching(accountId, { ...f, contains: undefined }, now, { expiredFromNow: o.after === undefined })
        .select(order === 'key' ? [sql<null>`NULL`.as('sort'), 'key'] : [sql.ref<number | null>(order).as('sort'), 'key'])
        .$call((q) => fromCursor(q, order, past, o.before ?? o.after))
        .$call((q) => inOrder(q, order, direction))
        .limit(1)
        .offset(rows - 1),
    );
    return row && { sort: row.sort, key: row.key };
  }

  /**
   * A page of the filter's licenses. A piece of text that many licenses contain (the shop's domain)
   * would read and sort every match through the trigram index; so unless SQLite's FTS5 index has
   * already found that there are few (`fewMatchIds`), the page is first walked along the order's
   * index (`walkPage`): a dense piece fills the page within a few rows. Only when the walk cannot
   * decide the page does the index serve it.
   */
  async search(accountId: string, f: LicenseFilter, now: number, o: PageOptions): Promise<LicenseSummary[]> {
    let rows: Awaited<ReturnType<typeof this.readPage>> | undefined;
    if (f.contains !== undefined) {
      const ids = await this.fewMatchIds(f.contains);
      rows = ids ? await this.readPage(accountId, f, now, { ...o, ids }) : await this.walkPage(accountId, f, now, o);
    }
    rows ??= await this.readPage(accountId, f, now, o);
    if (o.before !== undefined) rows.reverse();
    return rows.map((r) => ({ ...toRecord(r), activeDeviceCount: Number(r.device_count ?? 0) }));
  }

  private readPage(accountId: string, f: LicenseFilter, now: number, o: PageOptions & TextPath) {
    return this.store.read.all(this.searchQuery(accountId, f, now, o));
  }

  /**
   * A page of a piece of text walked along the order's index, or undefined when the walk cannot
   * decide it. A first window of `walkRows` rows per WALK_PAGE rows of the page (so an export's batch
   * of 1,000 walks 20 windows' worth); when it holds some matches, too few for the page, their density
   * says how many more rows the rest of the page needs, and a second window of half as many again
   * (at most WALK_GROWTH first windows' worth) goes on from where the first stopped. A full page, or
   * the whole rest of the list walked, decides the page.
   */
  private async walkPage(accountId: string, f: LicenseFilter, now: number, o: PageOptions) {
    const first = this.walkRows * Math.ceil(o.limit / WALK_PAGE);
    const back = o.before !== undefined;
    let from = o.before ?? o.after;
    let rows = first;
    const walked: Awaited<ReturnType<typeof this.readPage>> = [];
    for (let pass = 1; ; pass++) {
      const bounds = back ? { before: from } : { after: from };
      const bound = await this.walkBound(accountId, f, now, bounds, rows);
      walked.push(...(await this.readPage(accountId, f, now, { ...bounds, limit: o.limit - walked.length, walk: { bound } })));
      if (walked.length === o.limit || bound === undefined) return walked;
      if (walked.length === 0 || pass === 2) return undefined;
      rows = Math.ceil((((o.limit - walked.length) * first) / walked.length) * 1.5);
      if (rows > WALK_GROWTH * first) return undefined;
      from = bound;
    }
  }

  async countMatches(accountId: string, f: LicenseFilter, now: number, cap: number): Promise<number> {
    if (f.contains !== undefined) {
      const ids = await this.fewMatchIds(f.contains);
      if (ids) return this.countIn(accountId, f, now, cap, ids);
      const walked = await this.countByWalk(accountId, f, now, cap);
      if (walked !== undefined) return walked;
    }
    return this.countIn(accountId, f, now, cap);
  }

  /** The filter's matches through the trigram index (or the side rows it found), at most `cap` + 1. */
  private async countIn(accountId: string, f: LicenseFilter, now: number, cap: number, ids?: readonly number[]): Promise<number> {
    const capped = this.matching(accountId, f, now, { expiredFromNow: true, ids }).select(sql<number>`1`.as('one')).limit(cap + 1);
    const row = await this.store.read.first(this.db.selectFrom(capped.as('m')).select((eb) => eb.fn.countAll<number>().as('n')));
    return Number(row?.n ?? 0);
  }

  /**
   * A dense piece's capped count, read row by row (`walkWindow`): through the trigram index, a piece
   * in every license reads every match (1-3 s at 1,000,000). First `walkRows` rows, each tested:
   * they are all of the
   * filter's rows (the exact count), or fewer than one in COUNT_WINDOW matches (undefined: the index
   * counts). Then up to COUNT_WINDOW × (cap + 1) rows, stopping at the `cap` + 1st match: more than
   * `cap`, or undefined.
   */
  private async countByWalk(accountId: string, f: LicenseFilter, now: number, cap: number): Promise<number | undefined> {
    const sample = await this.store.read.first(
      this.db
        .selectFrom(this.walkWindow(accountId, f, now, this.walkRows).as('licenses'))
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<number>(sql`CASE WHEN ${this.rowContains(f.contains!)} THEN 1 ELSE 0 END`).as('matched')]),
    );
    const [rows, matched] = [Number(sample?.n ?? 0), Number(sample?.matched ?? 0)];
    if (rows < this.walkRows) return Math.min(matched, cap + 1);
    if (matched * COUNT_WINDOW < this.walkRows) return undefined;
    const capped = this.db
      .selectFrom(this.walkWindow(accountId, f, now, COUNT_WINDOW * (cap + 1)).as('licenses'))
      .select(sql<number>`1`.as('one'))
      .where(this.rowContains(f.contains!))
      .limit(cap + 1);
    const n = Number((await this.store.read.first(this.db.selectFrom(capped.as('m')).select((eb) => eb.fn.countAll<number>().as('n'))))?.n ?? 0);
    return n > cap ? n : undefined;
  }

  /**
   * The search side rows whose text contains `piece` in the trigram index, all accounts', when there
   * are fewer than `walkRows`; undefined when there are more, or on PostgreSQL, whose GIN scan builds
   * its whole bitmap first (SQLite's FTS5 reads a phrase's matches lazily: ~1 ms for a rare piece, 6 ms
   * to find 1,000 of "@example" at 1,000,000). The page and the count are then served from these ids:
   * a piece of common trigrams (`device-333333`, every identifier starting `device-`) costs one read
   * of its long lists, not three. Concurrent calls for one piece (a page and its count) share the
   * read. Rows past the indexer's watermark are read apart (`containing`).
   */
  private fewMatchIds(piece: string): Promise<readonly number[] | undefined> {
    if (this.store.dialect !== 'sqlite') return Promise.resolve(undefined);
    let read = this.idReads.get(piece);
    if (!read) {
      read = this.store.read
        .all<{ id: number }>(sql`SELECT rowid AS id FROM license_search_fts WHERE license_search_fts MATCH ${ftsPhrase(piece)} LIMIT ${this.walkRows}`.compile(this.db))
        .then((rows) => (rows.length < this.walkRows ? rows.map((r) => r.id) : undefined))
        .finally(() => this.idReads.delete(piece));
      this.idReads.set(piece, read);
    }
    return read;
  }

  /**
   * `rows` rows of the filter, the text aside, each read once, to be tested as `licenses` by a count.
   * In no order (a count needs none): the planner reads them the cheapest way, a status's index or
   * PostgreSQL's heap in sequence (in key order, "@example" among revoked licenses took 110 ms on
   * SQLite against 18, at 1,000,000).
   */
  private walkWindow(accountId: string, f: LicenseFilter, now: number, rows: number) {
    return this.matching(accountId, { ...f, contains: undefined }, now, { expiredFromNow: true }).select(['key', 'email_normalized']).limit(rows);
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

import { sql } from 'kysely';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { bool } from '../../storage/schema.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import { DEVICES_PREVIEW, type DevicePage, type LinkRequest, type PortalLicenseRow, type PortalRepository, type PortalScope, type ResetRule, type TokenRecord } from './service.ts';

const DAY = 24 * 60 * 60_000;
/** The newest licenses of an address that one page shows (keeps the page and its queries bounded). */
const PORTAL_LICENSE_LIMIT = 500;

export class SqlPortalRepository implements PortalRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  /** Licenses of `scope` on products shown in the portal (the filter every portal query shares). */
  private visible(scope: PortalScope) {
    return this.db
      .selectFrom('licenses as l')
      .innerJoin('products as p', 'p.id', 'l.product_id')
      .where('l.email_normalized', '=', scope.email)
      .where('p.portal_show', '=', 1)
      .$if(scope.accountId !== null, (q) => q.where('l.account_id', '=', scope.accountId!));
  }

  async recentLinkRequests(unit: Unit, email: string, since: number): Promise<LinkRequest[]> {
    const rows = await executorOf(unit).all(
      this.db
        .selectFrom('portal_link_requests')
        .select(['requested_at', 'client'])
        .where('email_normalized', '=', email)
        .where('requested_at', '>', since)
        .orderBy('requested_at')
        .$if(this.store.lockRows, (q) => q.forUpdate()),
    );
    return rows.map((r) => ({ at: r.requested_at, client: r.client }));
  }

  async recordLinkRequest(unit: Unit, email: string, client: string, now: number, forgetBefore: number): Promise<void> {
    const tx = executorOf(unit);
    await tx.run(this.db.insertInto('portal_link_requests').values({ email_normalized: email, requested_at: now, client }));
    // Both indexed by time.
    await tx.run(this.db.deleteFrom('portal_link_requests').where('requested_at', '<=', forgetBefore));
    await tx.run(this.db.deleteFrom('portal_tokens').where('expires_at', '<', now - DAY));
  }

  async vendorsOf(unit: Unit, email: string): Promise<string[]> {
    const rows = await executorOf(unit).all(this.visible({ email, accountId: null }).select('l.account_id').distinct().limit(2));
    return rows.map((r) => r.account_id);
  }

  async insertToken(unit: Unit, token: TokenRecord): Promise<void> {
    await executorOf(unit).run(this.db.insertInto('portal_tokens').values(toRow(token)));
  }

  async findToken(tokenHash: string, kind: TokenRecord['kind'], now: number): Promise<TokenRecord | undefined> {
    const row = await this.store.read.first(
      this.db.selectFrom('portal_tokens').selectAll().where('token_hash', '=', tokenHash).where('kind', '=', kind).where('expires_at', '>', now),
    );
    return (
      row && {
        tokenHash: row.token_hash,
        kind: row.kind,
        email: row.email_normalized,
        accountId: row.account_id,
        expiresAt: row.expires_at,
        createdAt: row.created_at,
        linkHash: row.link_hash,
      }
    );
  }

  async endSession(unit: Unit, session: TokenRecord): Promise<void> {
    const tx = executorOf(unit);
    await tx.run(this.db.deleteFrom('portal_tokens').where('token_hash', '=', session.tokenHash));
    const link = session.linkHash;
    if (link === null) return; // a session from before migration 009
    // Both indexed: the link by its primary key, its sessions by link_hash.
    await tx.run(this.db.deleteFrom('portal_tokens').where('token_hash', '=', link));
    await tx.run(this.db.deleteFrom('portal_tokens').where('link_hash', '=', link));
  }

  async listLicenses(scope: PortalScope, now: number): Promise<PortalLicenseRow[]> {
    const rows = await this.store.read.all(
      this.visible(scope)
        .innerJoin('accounts as a', 'a.id', 'l.account_id')
        .select([
          'l.key',
          'l.account_id',
          'l.type',
          'l.expires_at',
          'l.revoked',
          'l.max_devices',
          'l.created_at',
          'p.name as product_name',
          'p.fallback_enabled',
          'p.portal_allow_device_reset',
          'p.portal_device_reset_limit',
          'p.portal_device_reset_window_days',
          'p.support_email',
          'p.purchase_note',
          'p.action_button_text',
          'p.action_button_url',
          'a.email as owner_email',
        ])
        .orderBy('l.created_at', 'desc')
        .orderBy('l.key')
        .limit(PORTAL_LICENSE_LIMIT),
    );
    if (rows.length === 0) return [];
    const keys = rows.map((r) => r.key);
    // The first devices of each license and the count of all: the page stays bounded however
    // many devices a license has (an answer of 1.87 MB at 11,000 devices before).
    const devices = await this.store.read.all(
      this.db
        .selectFrom((eb) =>
          eb
            .selectFrom('devices')
            .select(['license_key', 'identifier', 'name', 'activation_date'])
            .select(sql<number>`row_number() over (partition by license_key order by activation_date, identifier)`.as('position'))
            .where('license_key', 'in', keys)
            .as('ranked'),
        )
        .selectAll()
        .where('position', '<=', DEVICES_PREVIEW)
        .orderBy('activation_date')
        .orderBy('identifier'),
    );
    const counts = new Map(
      (
        await this.store.read.all(
          this.db.selectFrom('devices').select((eb) => ['license_key', eb.fn.countAll().as('n')]).where('license_key', 'in', keys).groupBy('license_key'),
        )
      ).map((c) => [c.license_key, Number(c.n)]),
    );
    const longestWindow = Math.max(...rows.map((r) => r.portal_device_reset_window_days)) * DAY;
    const resets = await this.store.read.all(
      this.db
        .selectFrom('portal_device_resets')
        .selectAll()
        .where('license_key', 'in', keys)
        .where('reset_at', '>', now - longestWindow)
        .orderBy('reset_at'),
    );
    return rows.map((r) => ({
      key: r.key,
      accountId: r.account_id,
      type: r.type,
      expiresAt: r.expires_at,
      revoked: bool(r.revoked),
      maxDevices: r.max_devices,
      createdAt: r.created_at,
      productName: r.product_name,
      fallbackEnabled: bool(r.fallback_enabled),
      allowDeviceReset: bool(r.portal_allow_device_reset),
      resetLimit: r.portal_device_reset_limit,
      resetWindowMs: r.portal_device_reset_window_days * DAY,
      supportEmail: r.support_email ?? r.owner_email,
      purchaseNote: r.purchase_note,
      actionButtonText: r.action_button_text,
      actionButtonUrl: r.action_button_url,
      devices: devices
        .filter((d) => d.license_key === r.key)
        .map((d) => ({ identifier: d.identifier, name: d.name, activationDate: d.activation_date })),
      deviceCount: counts.get(r.key) ?? 0,
      resets: resets.filter((x) => x.license_key === r.key && x.reset_at > now - r.portal_device_reset_window_days * DAY).map((x) => x.reset_at),
    }));
  }

  async devicePage(scope: PortalScope, key: string, offset: number, limit: number): Promise<DevicePage | undefined> {
    const license = await this.store.read.first(
      this.visible(scope)
        .select((eb) => [
          'l.key',
          'l.max_devices',
          'p.name as product_name',
          eb.selectFrom('devices as c').select(eb.fn.countAll().as('n')).whereRef('c.license_key', '=', 'l.key').as('total'),
        ])
        .where('l.key', '=', key),
    );
    if (!license) return undefined;
    const devices = await this.store.read.all(
      this.db.selectFrom('devices').selectAll().where('license_key', '=', key).orderBy('activation_date').orderBy('identifier').limit(limit).offset(offset),
    );
    return {
      key: license.key,
      productName: license.product_name,
      maxDevices: license.max_devices,
      total: Number(license.total),
      devices: devices.map((d) => ({ identifier: d.identifier, name: d.name, activationDate: d.activation_date })),
    };
  }

  async lockVisible(unit: Unit, scope: PortalScope, key: string): Promise<ResetRule | undefined> {
    const row = await executorOf(unit).first(
      this.visible(scope)
        .select(['p.portal_allow_device_reset', 'p.portal_device_reset_limit', 'p.portal_device_reset_window_days'])
        .where('l.key', '=', key)
        // The license row is the lock: concurrent resets of one license queue up here.
        .$if(this.store.lockRows, (q) => q.forUpdate('l')),
    );
    return (
      row && {
        allowDeviceReset: bool(row.portal_allow_device_reset),
        resetLimit: row.portal_device_reset_limit,
        resetWindowMs: row.portal_device_reset_window_days * DAY,
      }
    );
  }

  async resetsSince(unit: Unit, key: string, since: number): Promise<number[]> {
    const rows = await executorOf(unit).all(
      this.db.selectFrom('portal_device_resets').select('reset_at').where('license_key', '=', key).where('reset_at', '>', since).orderBy('reset_at'),
    );
    return rows.map((r) => r.reset_at);
  }

  async recordReset(unit: Unit, key: string, now: number, forgetBefore: number): Promise<void> {
    const tx = executorOf(unit);
    await tx.run(this.db.deleteFrom('portal_device_resets').where('license_key', '=', key).where('reset_at', '<=', forgetBefore));
    await tx.run(this.db.insertInto('portal_device_resets').values({ license_key: key, reset_at: now }));
  }
}

const toRow = (t: TokenRecord) => ({
  token_hash: t.tokenHash,
  kind: t.kind,
  email_normalized: t.email,
  account_id: t.accountId,
  expires_at: t.expiresAt,
  created_at: t.createdAt,
  link_hash: t.linkHash,
});

import type { Store } from '../../storage/index.ts';
import { Prepared } from '../../storage/prepared.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Insertable, Updateable } from 'kysely';
import { decodeEntitlements, encodeEntitlements } from '../../core/entitlements.ts';
import { bool, flag, type ProductRow, type ProductsTable } from '../../storage/schema.ts';
import type { Product, ProductFields, ProductRepository } from './service.ts';

export const toProduct = (r: ProductRow): Product => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  description: r.description,
  supportEmail: r.support_email,
  createdAt: r.created_at,
  portalShow: bool(r.portal_show),
  portalAllowDeviceReset: bool(r.portal_allow_device_reset),
  hasImage: bool(r.has_image),
  fallbackEnabled: bool(r.fallback_enabled),
  purchaseNote: r.purchase_note,
  actionButtonText: r.action_button_text,
  actionButtonUrl: r.action_button_url,
  portalDeviceResetLimit: r.portal_device_reset_limit,
  portalDeviceResetWindowDays: r.portal_device_reset_window_days,
  defaultEntitlements: decodeEntitlements(r.default_entitlements),
  floating: { enabled: bool(r.floating_enabled), leaseSeconds: r.lease_seconds },
  trial: { enabled: bool(r.trial_enabled), days: r.trial_days, maxDevices: r.trial_max_devices },
});

/** Maps the writable fields that are present to their columns. */
function columns(f: Partial<ProductFields> & { hasImage?: boolean }) {
  const set: Updateable<ProductsTable> = {};
  if (f.hasImage !== undefined) set.has_image = flag(f.hasImage);
  if (f.name !== undefined) set.name = f.name;
  if (f.description !== undefined) set.description = f.description;
  if (f.supportEmail !== undefined) set.support_email = f.supportEmail;
  if (f.portalShow !== undefined) set.portal_show = flag(f.portalShow);
  if (f.portalAllowDeviceReset !== undefined) set.portal_allow_device_reset = flag(f.portalAllowDeviceReset);
  if (f.fallbackEnabled !== undefined) set.fallback_enabled = flag(f.fallbackEnabled);
  if (f.purchaseNote !== undefined) set.purchase_note = f.purchaseNote;
  if (f.actionButtonText !== undefined) set.action_button_text = f.actionButtonText;
  if (f.actionButtonUrl !== undefined) set.action_button_url = f.actionButtonUrl;
  if (f.portalDeviceResetLimit !== undefined) set.portal_device_reset_limit = f.portalDeviceResetLimit;
  if (f.portalDeviceResetWindowDays !== undefined) set.portal_device_reset_window_days = f.portalDeviceResetWindowDays;
  if (f.defaultEntitlements !== undefined) set.default_entitlements = encodeEntitlements(f.defaultEntitlements);
  if (f.floating !== undefined) {
    set.floating_enabled = flag(f.floating.enabled);
    set.lease_seconds = f.floating.leaseSeconds;
  }
  if (f.trial !== undefined) {
    set.trial_enabled = flag(f.trial.enabled);
    set.trial_days = f.trial.days;
    set.trial_max_devices = f.trial.maxDevices;
  }
  return set;
}

export class SqlProductRepository implements ProductRepository {
  /** Reads of one product, on every request that names one (license creation, tokens...): built and compiled once. */
  private readonly q;

  constructor(private readonly store: Store) {
    const owned = (p: <K extends 'id' | 'account'>(name: K) => string) =>
      store.db.selectFrom('products').selectAll().where('id', '=', p('id')).where('account_id', '=', p('account'));
    this.q = {
      owned: new Prepared<{ id: string; account: string }, ProductRow>(owned),
      lock: new Prepared<{ id: string; account: string }, ProductRow>((p) => owned(p).$if(store.lockRows, (q) => q.forUpdate())),
    };
  }

  private get db() {
    return this.store.db;
  }

  async insert(unit: Unit, p: Product): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('products').values({
        id: p.id,
        account_id: p.accountId,
        created_at: p.createdAt,
        has_image: flag(p.hasImage),
        ...(columns(p) as Omit<Insertable<ProductsTable>, 'id' | 'account_id' | 'created_at' | 'has_image'>),
      }),
    );
  }

  async get(accountId: string, id: string, unit?: Unit): Promise<Product | undefined> {
    const row = await readerOf(this.store, unit).first(this.q.owned.bind({ id, account: accountId }));
    return row && toProduct(row);
  }

  async findAny(id: string, unit?: Unit): Promise<Product | undefined> {
    const row = await readerOf(this.store, unit).first(this.db.selectFrom('products').selectAll().where('id', '=', id));
    return row && toProduct(row);
  }

  async list(accountId: string): Promise<Product[]> {
    const rows = await this.store.read.all(
      this.db.selectFrom('products').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id'),
    );
    return rows.map(toProduct);
  }

  async lock(unit: Unit, accountId: string, id: string): Promise<Product | undefined> {
    const row = await executorOf(unit).first(this.q.lock.bind({ id, account: accountId }));
    return row && toProduct(row);
  }

  async update(unit: Unit, accountId: string, id: string, fields: Partial<ProductFields> & { hasImage?: boolean }): Promise<void> {
    const set = columns(fields);
    if (Object.keys(set).length === 0) return;
    await executorOf(unit).run(this.db.updateTable('products').set(set).where('id', '=', id).where('account_id', '=', accountId));
  }

  async hasLicenses(unit: Unit, id: string): Promise<boolean> {
    return (await executorOf(unit).first(this.db.selectFrom('licenses').select('key').where('product_id', '=', id).limit(1))) !== undefined;
  }

  async delete(unit: Unit, accountId: string, id: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('products').where('id', '=', id).where('account_id', '=', accountId));
  }
}

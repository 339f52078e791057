import type { Store } from '../../storage/index.ts';
import type { Insertable, Updateable } from 'kysely';
import { bool, flag, type ProductRow, type ProductsTable } from '../../storage/schema.ts';
import type { Product, ProductFields, ProductRepository } from './service.ts';

export const toProduct = (r: ProductRow): Product => ({
  id: r.id,
  userId: r.user_id,
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
});

/** Maps the writable fields that are present to their columns. */
function columns(f: Partial<ProductFields>) {
  const set: Updateable<ProductsTable> = {};
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
  return set;
}

export class SqlProductRepository implements ProductRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async insert(p: Product): Promise<void> {
    await this.store.write((tx) =>
      tx.run(
        this.db.insertInto('products').values({
          id: p.id,
          user_id: p.userId,
          created_at: p.createdAt,
          has_image: flag(p.hasImage),
          ...(columns(p) as Omit<Insertable<ProductsTable>, 'id' | 'user_id' | 'created_at' | 'has_image'>),
        }),
      ),
    );
  }

  async get(userId: string, id: string): Promise<Product | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('products').selectAll().where('id', '=', id).where('user_id', '=', userId));
    return row && toProduct(row);
  }

  async list(userId: string): Promise<Product[]> {
    const rows = await this.store.read.all(
      this.db.selectFrom('products').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id'),
    );
    return rows.map(toProduct);
  }

  update(userId: string, id: string, fields: Partial<ProductFields>): Promise<Product | undefined> {
    const set = columns(fields);
    return this.store.write(async (tx) => {
      if (Object.keys(set).length > 0) {
        await tx.run(this.db.updateTable('products').set(set).where('id', '=', id).where('user_id', '=', userId));
      }
      const row = await tx.first(this.db.selectFrom('products').selectAll().where('id', '=', id).where('user_id', '=', userId));
      return row && toProduct(row);
    });
  }

  delete(userId: string, id: string, force: boolean): Promise<'deleted' | 'missing' | 'has_licenses'> {
    return this.store.write(async (tx) => {
      const owned = await tx.first(
        this.db.selectFrom('products').select('id').where('id', '=', id).where('user_id', '=', userId).$if(this.store.lockRows, (q) => q.forUpdate()),
      );
      if (!owned) return 'missing';
      const license = await tx.first(this.db.selectFrom('licenses').select('key').where('product_id', '=', id).limit(1));
      if (license && !force) return 'has_licenses';
      // Devices and licenses go by ON DELETE CASCADE.
      await tx.run(this.db.deleteFrom('products').where('id', '=', id).where('user_id', '=', userId));
      return 'deleted';
    });
  }
}

import type { Selectable } from 'kysely';
import { decodeEntitlements, encodeEntitlements } from '../../core/entitlements.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import type { OffersTable } from '../../storage/schema.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { CustomerLicense, Offer, OfferKind, OfferRepository } from './types.ts';

const toOffer = (r: Selectable<OffersTable>): Offer => ({
  id: r.id,
  accountId: r.account_id,
  productId: r.product_id,
  kind: r.kind,
  name: r.name,
  provider: r.provider,
  priceId: r.price_id,
  extendDays: r.extend_days,
  targetProductId: r.target_product_id,
  maxDevices: r.max_devices,
  licenseType: r.license_type === 'perpetual' ? 'perpetual' : null,
  entitlements: r.entitlements === null ? null : decodeEntitlements(r.entitlements),
  createdAt: Number(r.created_at),
});

export class SqlOfferRepository implements OfferRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async insert(unit: Unit, o: Offer): Promise<boolean> {
    const n = await executorOf(unit).run(
      this.db
        .insertInto('offers')
        .values({
          id: o.id,
          account_id: o.accountId,
          product_id: o.productId,
          kind: o.kind,
          name: o.name,
          provider: o.provider,
          price_id: o.priceId,
          extend_days: o.extendDays,
          target_product_id: o.targetProductId,
          max_devices: o.maxDevices,
          license_type: o.licenseType,
          entitlements: o.entitlements === null ? null : encodeEntitlements(o.entitlements),
          created_at: o.createdAt,
        })
        .onConflict((oc) => oc.columns(['account_id', 'product_id', 'provider', 'price_id']).doNothing()),
    );
    return n === 1;
  }

  async countLocked(unit: Unit, accountId: string, productId: string, kind: OfferKind): Promise<number> {
    const tx = executorOf(unit);
    // The product's row serializes concurrent creations (PostgreSQL; SQLite runs units one at a time).
    if (this.store.lockRows) await tx.first(this.db.selectFrom('products').select('id').where('id', '=', productId).where('account_id', '=', accountId).forUpdate());
    const rows = await tx.all(this.db.selectFrom('offers').select('id').where('account_id', '=', accountId).where('product_id', '=', productId).where('kind', '=', kind));
    return rows.length;
  }

  async list(accountId: string, productId: string): Promise<Offer[]> {
    const rows = await this.store.read.all(
      this.db.selectFrom('offers').selectAll().where('account_id', '=', accountId).where('product_id', '=', productId).orderBy('created_at').orderBy('id'),
    );
    return rows.map(toOffer);
  }

  async delete(unit: Unit, accountId: string, productId: string, id: string): Promise<boolean> {
    const n = await executorOf(unit).run(this.db.deleteFrom('offers').where('account_id', '=', accountId).where('product_id', '=', productId).where('id', '=', id));
    return n > 0;
  }

  async customerLicenses(scope: { email: string; accountId: string | null }, licenseKeys: string[]): Promise<CustomerLicense[]> {
    if (licenseKeys.length === 0) return [];
    const rows = await this.store.read.all(
      this.db
        .selectFrom('licenses')
        .select(['key', 'account_id', 'product_id', 'type', 'expires_at', 'email'])
        .where('key', 'in', licenseKeys)
        .where('email_normalized', '=', scope.email)
        .where('revoked', '=', 0)
        .$if(scope.accountId !== null, (q) => q.where('account_id', '=', scope.accountId!)),
    );
    return rows.map((r) => ({ key: r.key, accountId: r.account_id, productId: r.product_id, type: r.type, expiresAt: r.expires_at === null ? null : Number(r.expires_at), email: r.email }));
  }

  async findByPrice(unit: Unit, accountId: string, productId: string, provider: string, priceIds: string[]): Promise<Offer | undefined> {
    if (priceIds.length === 0) return undefined;
    const row = await executorOf(unit).first(
      this.db
        .selectFrom('offers')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('product_id', '=', productId)
        .where('provider', '=', provider)
        .where('price_id', 'in', priceIds)
        .orderBy('price_id'),
    );
    return row && toOffer(row);
  }
}

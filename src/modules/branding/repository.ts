import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { ImageType, StoredImage } from '../product-images/image.ts';
import type { Branding, BrandingRepository } from './service.ts';

/** One row per account that set any branding; the logo's bytes beside it, as product images keep theirs. */
export class SqlBrandingRepository implements BrandingRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async find(accountId: string, unit?: Unit): Promise<Branding | undefined> {
    const query = this.db
      .selectFrom('account_branding')
      .select(['account_id', 'display_name', 'accent_color', 'logo_etag', 'updated_at'])
      .where('account_id', '=', accountId);
    const row = unit ? await executorOf(unit).first(query) : await this.store.read.first(query);
    if (!row) return undefined;
    return {
      accountId: row.account_id,
      displayName: row.display_name,
      accentColor: row.accent_color,
      logo: row.logo_etag ? { etag: row.logo_etag, updatedAt: Number(row.updated_at) } : null,
    };
  }

  async save(unit: Unit, accountId: string, f: { displayName: string | null; accentColor: string | null }, at: number): Promise<void> {
    const set = { display_name: f.displayName, accent_color: f.accentColor, updated_at: at };
    await executorOf(unit).run(
      this.db
        .insertInto('account_branding')
        .values({ account_id: accountId, ...set })
        .onConflict((oc) => oc.column('account_id').doUpdateSet(set)),
    );
  }

  async putLogo(unit: Unit, accountId: string, image: StoredImage): Promise<void> {
    await executorOf(unit).run(
      this.db
        .updateTable('account_branding')
        .set({ logo_type: image.contentType, logo_data: image.data, logo_etag: image.etag, updated_at: image.updatedAt })
        .where('account_id', '=', accountId),
    );
  }

  async removeLogo(unit: Unit, accountId: string, at: number): Promise<void> {
    await executorOf(unit).run(
      this.db.updateTable('account_branding').set({ logo_type: null, logo_data: null, logo_etag: null, updated_at: at }).where('account_id', '=', accountId),
    );
  }

  async logo(accountId: string): Promise<StoredImage | undefined> {
    const row = await this.store.read.first(
      this.db.selectFrom('account_branding').select(['logo_type', 'logo_data', 'logo_etag', 'updated_at']).where('account_id', '=', accountId),
    );
    if (!row?.logo_data || !row.logo_type || !row.logo_etag) return undefined;
    return { contentType: row.logo_type as ImageType, data: Buffer.from(row.logo_data), etag: row.logo_etag, updatedAt: Number(row.updated_at) };
  }
}

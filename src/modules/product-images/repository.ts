import type { Store } from '../../storage/index.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { ImageType, ProductImageRepository, StoredImage } from './service.ts';

/**
 * Images live in the database, not on disk: every server process on one PostgreSQL serves the
 * same bytes with no shared volume, and a product's image goes with it (ON DELETE CASCADE).
 */
export class SqlProductImageRepository implements ProductImageRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async put(unit: Unit, productId: string, image: StoredImage): Promise<void> {
    const row = { content_type: image.contentType, data: image.data, etag: image.etag, updated_at: image.updatedAt };
    await executorOf(unit).run(
      this.db
        .insertInto('product_images')
        .values({ product_id: productId, ...row })
        .onConflict((oc) => oc.column('product_id').doUpdateSet(row)),
    );
  }

  async remove(unit: Unit, productId: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('product_images').where('product_id', '=', productId));
  }

  async get(productId: string): Promise<StoredImage | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('product_images').selectAll().where('product_id', '=', productId));
    return row && { contentType: row.content_type as ImageType, data: Buffer.from(row.data), etag: row.etag, updatedAt: row.updated_at };
  }
}

import { sql } from 'kysely';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { ActivityCount, ActivityRepository } from './service.ts';

export class SqlActivityRepository implements ActivityRepository {
  constructor(private readonly store: Store) {}

  async add(unit: Unit, counts: ActivityCount[]): Promise<void> {
    const ex = executorOf(unit);
    const db = this.store.db;
    // Products deleted since they were counted are skipped (their counts went with them).
    const live = new Set(
      (await ex.all(db.selectFrom('products').select('id').where('id', 'in', [...new Set(counts.map((c) => c.productId))]))).map((r) => r.id),
    );
    for (const c of counts) {
      if (!live.has(c.productId)) continue;
      await ex.run(
        db
          .insertInto('activity_daily')
          .values({ product_id: c.productId, day: c.day, account_id: c.accountId, activations: c.activations, validations: c.validations })
          .onConflict((oc) =>
            oc.columns(['product_id', 'day']).doUpdateSet({
              activations: sql`activity_daily.activations + ${c.activations}`,
              validations: sql`activity_daily.validations + ${c.validations}`,
            }),
          ),
      );
    }
  }

  async list(accountId: string, fromDay: number, productId?: string): Promise<ActivityCount[]> {
    const rows = await this.store.read.all(
      this.store.db
        .selectFrom('activity_daily')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('day', '>=', fromDay)
        .$if(productId !== undefined, (q) => q.where('product_id', '=', productId!)),
    );
    return rows.map((r) => ({ productId: r.product_id, accountId: r.account_id, day: Number(r.day), activations: Number(r.activations), validations: Number(r.validations) }));
  }
}

import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import type { TrialRepository } from './service.ts';

export class SqlTrialRepository implements TrialRepository {
  constructor(private readonly store: Store) {}

  async claim(unit: Unit, productId: string, deviceIdentifier: string, licenseKey: string, now: number): Promise<boolean> {
    const inserted = await executorOf(unit).run(
      this.store.db
        .insertInto('trials')
        .values({ product_id: productId, device_identifier: deviceIdentifier, license_key: licenseKey, created_at: now })
        // On PostgreSQL a concurrent claim of the same key waits for the first unit, then does nothing.
        .onConflict((oc) => oc.columns(['product_id', 'device_identifier']).doNothing()),
    );
    return inserted === 1;
  }

  async licenseOf(productId: string, deviceIdentifier: string, unit?: Unit): Promise<string | undefined> {
    const row = await readerOf(this.store, unit).first(
      this.store.db.selectFrom('trials').select('license_key').where('product_id', '=', productId).where('device_identifier', '=', deviceIdentifier),
    );
    return row?.license_key;
  }
}

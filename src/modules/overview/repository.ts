import { sql } from 'kysely';
import type { Store } from '../../storage/index.ts';
import { flag } from '../../storage/schema.ts';
import type { LicenseTally, OverviewRepository, Revenue } from './types.ts';

export class SqlOverviewRepository implements OverviewRepository {
  constructor(private readonly store: Store) {}

  async tallySlice(accountId: string, afterKey: string, slice: number, now: number): Promise<LicenseTally & { lastKey: string | null }> {
    const { db } = this.store;
    // The slice is a range of `licenses_account_key_idx`; each license's devices are a probe of the devices' primary key.
    const keys = db.selectFrom('licenses').select(['key', 'revoked', 'expires_at']).where('account_id', '=', accountId).where('key', '>', afterKey).orderBy('key').limit(slice);
    const row = await this.store.read.first(
      db
        .selectFrom(keys.as('s'))
        .select([
          sql<number>`count(*)`.as('licenses'),
          sql<number>`coalesce(sum(case when s.revoked = ${flag(true)} then 1 else 0 end), 0)`.as('revoked'),
          sql<number>`coalesce(sum(case when s.revoked = ${flag(false)} and s.expires_at <= ${now} then 1 else 0 end), 0)`.as('expired'),
          sql<number>`coalesce(sum((select count(*) from devices d where d.license_key = s.key)), 0)`.as('active_devices'),
          sql<string | null>`max(s.key)`.as('last_key'),
        ]),
    );
    const licenses = Number(row?.licenses ?? 0);
    return {
      licenses,
      revoked: Number(row?.revoked ?? 0),
      expired: Number(row?.expired ?? 0),
      activeDevices: Number(row?.active_devices ?? 0),
      lastKey: licenses < slice ? null : (row?.last_key ?? null),
    };
  }

  async revenueSince(accountId: string, since: number): Promise<{ paid: Revenue[]; refundedOrDisputed: number }> {
    const rows = await this.store.read.all(
      this.store.db
        .selectFrom('purchases')
        .select(['currency', 'status', sql<number>`count(*)`.as('n'), sql<number>`coalesce(sum(amount_total), 0)`.as('amount')])
        .where('account_id', '=', accountId)
        .where('created_at', '>=', since)
        .groupBy(['currency', 'status']),
    );
    const paid = new Map<string, Revenue>();
    let refundedOrDisputed = 0;
    for (const r of rows) {
      if (r.status === 'refunded' || r.status === 'disputed') {
        refundedOrDisputed += Number(r.n);
        continue;
      }
      const currency = (r.currency ?? '').toUpperCase() || '—';
      const entry = paid.get(currency) ?? { currency, purchases: 0, amount: 0 };
      entry.purchases += Number(r.n);
      entry.amount += Number(r.amount);
      paid.set(currency, entry);
    }
    return { paid: [...paid.values()].sort((a, b) => b.amount - a.amount), refundedOrDisputed };
  }
}

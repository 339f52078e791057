import type { Selectable } from 'kysely';
import type { SubscriptionSnapshot } from '../../core/events.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { bool, flag, type LicenseSubscriptionsTable, type ProviderSubscriptionsTable } from '../../storage/schema.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import type { CustomerLink, SubscriptionLink, SubscriptionRef, SubscriptionRepository, SubscriptionState } from './types.ts';

const toState = (r: Selectable<ProviderSubscriptionsTable>): SubscriptionState => ({
  accountId: r.account_id,
  provider: r.provider,
  subscriptionId: r.subscription_id,
  customerId: r.customer_id,
  status: r.status,
  currentPeriodEnd: r.current_period_end === null ? null : Number(r.current_period_end),
  cancelAtPeriodEnd: bool(r.cancel_at_period_end),
  version: r.version,
  updatedAt: Number(r.updated_at),
});

const toLink = (r: Selectable<LicenseSubscriptionsTable>): SubscriptionLink => ({
  licenseKey: r.license_key,
  accountId: r.account_id,
  provider: r.provider,
  subscriptionId: r.subscription_id,
  itemId: r.item_id,
  priceId: r.price_id,
  graceDays: r.grace_days,
  createdAt: Number(r.created_at),
});

export class SqlSubscriptionRepository implements SubscriptionRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  private state(ref: SubscriptionRef) {
    return this.db
      .selectFrom('provider_subscriptions')
      .selectAll()
      .where('account_id', '=', ref.accountId)
      .where('provider', '=', ref.provider)
      .where('subscription_id', '=', ref.subscriptionId);
  }

  async version(ref: SubscriptionRef): Promise<number> {
    const row = await this.store.read.first(this.state(ref));
    return row?.version ?? 0;
  }

  async lockState(unit: Unit, ref: SubscriptionRef): Promise<SubscriptionState | undefined> {
    const tx = executorOf(unit);
    // SQLite's units run one at a time already; PostgreSQL takes a transaction-scoped advisory lock
    // (a row lock would lock nothing before the subscription's first state is saved).
    if (this.store.lockRows) {
      await tx.first({ sql: 'select pg_advisory_xact_lock(hashtextextended($1, 0))', parameters: [`subscription:${ref.accountId}:${ref.provider}:${ref.subscriptionId}`] });
    }
    const row = await tx.first(this.state(ref));
    return row && toState(row);
  }

  async saveState(unit: Unit, s: SubscriptionState): Promise<void> {
    const values = {
      customer_id: s.customerId,
      status: s.status,
      current_period_end: s.currentPeriodEnd,
      cancel_at_period_end: flag(s.cancelAtPeriodEnd),
      version: s.version,
      updated_at: s.updatedAt,
    };
    await executorOf(unit).run(
      this.db
        .insertInto('provider_subscriptions')
        .values({ account_id: s.accountId, provider: s.provider, subscription_id: s.subscriptionId, ...values })
        .onConflict((oc) => oc.columns(['account_id', 'provider', 'subscription_id']).doUpdateSet(values)),
    );
  }

  async links(unit: Unit, ref: SubscriptionRef): Promise<SubscriptionLink[]> {
    const rows = await executorOf(unit).all(
      this.db
        .selectFrom('license_subscriptions')
        .selectAll()
        .where('account_id', '=', ref.accountId)
        .where('provider', '=', ref.provider)
        .where('subscription_id', '=', ref.subscriptionId)
        .orderBy('created_at')
        .orderBy('license_key'),
    );
    return rows.map(toLink);
  }

  async insertLink(unit: Unit, l: SubscriptionLink): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('license_subscriptions').values({
        license_key: l.licenseKey,
        account_id: l.accountId,
        provider: l.provider,
        subscription_id: l.subscriptionId,
        item_id: l.itemId,
        price_id: l.priceId,
        grace_days: l.graceDays,
        created_at: l.createdAt,
      }),
    );
  }

  async updateLink(unit: Unit, licenseKey: string, f: Pick<SubscriptionLink, 'itemId' | 'priceId' | 'graceDays'>): Promise<void> {
    await executorOf(unit).run(
      this.db.updateTable('license_subscriptions').set({ item_id: f.itemId, price_id: f.priceId, grace_days: f.graceDays }).where('license_key', '=', licenseKey),
    );
  }

  async deleteLink(unit: Unit, accountId: string, licenseKey: string): Promise<boolean> {
    const n = await executorOf(unit).run(this.db.deleteFrom('license_subscriptions').where('account_id', '=', accountId).where('license_key', '=', licenseKey));
    return n > 0;
  }

  async snapshotsOf(accountId: string, licenseKeys: string[], unit?: Unit): Promise<Map<string, SubscriptionSnapshot & { customerId: string | null }>> {
    if (licenseKeys.length === 0) return new Map();
    const rows = await readerOf(this.store, unit).all(
      this.db
        .selectFrom('license_subscriptions as l')
        .innerJoin('provider_subscriptions as s', (join) =>
          join.onRef('s.account_id', '=', 'l.account_id').onRef('s.provider', '=', 'l.provider').onRef('s.subscription_id', '=', 'l.subscription_id'),
        )
        .select(['l.license_key', 's.provider', 's.subscription_id', 's.customer_id', 's.status', 's.current_period_end', 's.cancel_at_period_end'])
        .where('l.account_id', '=', accountId)
        .where('l.license_key', 'in', licenseKeys),
    );
    return new Map(
      rows.map((r) => [
        r.license_key,
        {
          provider: r.provider,
          id: r.subscription_id,
          customerId: r.customer_id,
          status: r.status,
          currentPeriodEnd: r.current_period_end === null ? null : Number(r.current_period_end),
          cancelAtPeriodEnd: bool(r.cancel_at_period_end),
        },
      ]),
    );
  }

  async customerLinks(scope: { email: string; accountId: string | null }, licenseKeys: string[]): Promise<CustomerLink[]> {
    if (licenseKeys.length === 0) return [];
    const rows = await this.store.read.all(
      this.db
        .selectFrom('license_subscriptions as l')
        .innerJoin('licenses as lic', 'lic.key', 'l.license_key')
        .innerJoin('provider_subscriptions as s', (join) =>
          join.onRef('s.account_id', '=', 'l.account_id').onRef('s.provider', '=', 'l.provider').onRef('s.subscription_id', '=', 'l.subscription_id'),
        )
        .select(['l.license_key', 'l.account_id', 'l.provider', 's.customer_id'])
        .where('l.license_key', 'in', licenseKeys)
        .where('lic.email_normalized', '=', scope.email)
        .$if(scope.accountId !== null, (q) => q.where('l.account_id', '=', scope.accountId!)),
    );
    return rows.map((r) => ({ licenseKey: r.license_key, accountId: r.account_id, provider: r.provider, customerId: r.customer_id }));
  }

  async recordEvent(unit: Unit, accountId: string, provider: string, eventId: string, now: number): Promise<boolean> {
    const n = await executorOf(unit).run(
      this.db
        .insertInto('provider_events')
        .values({ account_id: accountId, provider, event_id: eventId, created_at: now })
        // On PostgreSQL a concurrent insert of the same event waits for the other transaction, then skips.
        .onConflict((oc) => oc.columns(['account_id', 'provider', 'event_id']).doNothing()),
    );
    return n === 1;
  }

  async eventSeen(accountId: string, provider: string, eventId: string): Promise<boolean> {
    const row = await this.store.read.first(
      this.db.selectFrom('provider_events').select('event_id').where('account_id', '=', accountId).where('provider', '=', provider).where('event_id', '=', eventId),
    );
    return row !== undefined;
  }
}

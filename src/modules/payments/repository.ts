import type { Selectable } from 'kysely';
import { decodeEntitlements, encodeEntitlements } from '../../core/entitlements.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { bool, flag, type PaymentConnectionsTable, type PriceMappingsTable, type PurchasesTable } from '../../storage/schema.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import type { Executor } from '../../storage/store.ts';
import type { Connection, CustomerScope, PaymentRepository, PriceMapping, Purchase, PurchaseStatus } from './types.ts';

const toConnection = (r: Selectable<PaymentConnectionsTable>): Connection => ({
  id: r.id,
  accountId: r.account_id,
  provider: r.provider,
  livemode: bool(r.livemode),
  webhookEndpointId: r.webhook_endpoint_id,
  apiKeySealed: r.api_key_sealed,
  webhookSecretSealed: r.webhook_secret_sealed,
  connectedAt: r.connected_at,
});

const toMapping = (r: Selectable<PriceMappingsTable>): PriceMapping => ({
  accountId: r.account_id,
  provider: r.provider,
  priceId: r.price_id,
  productId: r.product_id,
  maxDevices: r.max_devices,
  licenseType: r.license_type,
  offsetDays: r.offset_days,
  fixedExpiresAt: r.fixed_expires_at,
  entitlements: r.entitlements === null ? null : decodeEntitlements(r.entitlements),
  createdAt: r.created_at,
  billing: r.billing,
  graceDays: r.grace_days,
});

const toPurchase = (r: Selectable<PurchasesTable>, licenseKeys: string[]): Purchase => ({
  id: r.id,
  accountId: r.account_id,
  provider: r.provider,
  sessionId: r.session_id,
  paymentId: r.payment_id,
  email: r.email,
  amountTotal: r.amount_total,
  currency: r.currency,
  status: r.status,
  kind: r.kind,
  subscriptionId: r.subscription_id,
  invoiceId: r.invoice_id,
  createdAt: r.created_at,
  licenseKeys,
});

export class SqlPaymentRepository implements PaymentRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  /** Purchases with the keys their line items created (one statement for the whole page). */
  private async withKeys(exec: Executor, rows: Selectable<PurchasesTable>[]): Promise<Purchase[]> {
    if (rows.length === 0) return [];
    const links = await exec.all(
      this.db
        .selectFrom('purchase_licenses')
        .select(['purchase_id', 'license_key'])
        .where(
          'purchase_id',
          'in',
          rows.map((r) => r.id),
        )
        .orderBy('purchase_id')
        .orderBy('line_item_id'),
    );
    const keys = new Map<string, string[]>();
    for (const l of links) keys.set(l.purchase_id, [...(keys.get(l.purchase_id) ?? []), l.license_key]);
    return rows.map((r) => toPurchase(r, keys.get(r.id) ?? []));
  }

  async findConnectionById(id: string): Promise<Connection | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('payment_connections').selectAll().where('id', '=', id));
    return row && toConnection(row);
  }

  async findConnection(accountId: string, provider: string, unit?: Unit): Promise<Connection | undefined> {
    const row = await readerOf(this.store, unit).first(
      this.db.selectFrom('payment_connections').selectAll().where('account_id', '=', accountId).where('provider', '=', provider),
    );
    return row && toConnection(row);
  }

  async replaceConnection(unit: Unit, c: Connection): Promise<Connection | undefined> {
    const tx = executorOf(unit);
    const current = () =>
      tx.first(
        this.db
          .selectFrom('payment_connections')
          .selectAll()
          .where('account_id', '=', c.accountId)
          .where('provider', '=', c.provider)
          .$if(this.store.lockRows, (q) => q.forUpdate()),
      );
    const insert = this.db
      .insertInto('payment_connections')
      .values({
        id: c.id,
        account_id: c.accountId,
        provider: c.provider,
        livemode: flag(c.livemode),
        webhook_endpoint_id: c.webhookEndpointId,
        api_key_sealed: c.apiKeySealed,
        webhook_secret_sealed: c.webhookSecretSealed,
        connected_at: c.connectedAt,
      })
      .onConflict((oc) => oc.columns(['account_id', 'provider']).doNothing());
    // A lock on no row locks nothing: when a concurrent connect inserts first (PostgreSQL), the insert
    // below waits for it and skips; the row is then there to lock and replace.
    for (;;) {
      const old = await current();
      if (old) await tx.run(this.db.deleteFrom('payment_connections').where('id', '=', old.id));
      if ((await tx.run(insert)) === 1) return old && toConnection(old);
    }
  }

  async deleteConnection(unit: Unit, accountId: string, id: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('payment_connections').where('id', '=', id).where('account_id', '=', accountId));
  }

  async findMapping(accountId: string, provider: string, priceId: string): Promise<PriceMapping | undefined> {
    const row = await this.store.read.first(
      this.db.selectFrom('price_mappings').selectAll().where('account_id', '=', accountId).where('provider', '=', provider).where('price_id', '=', priceId),
    );
    return row && toMapping(row);
  }

  async insertMapping(unit: Unit, m: PriceMapping): Promise<boolean> {
    const inserted = await executorOf(unit).run(
      this.db
        .insertInto('price_mappings')
        .values({
          account_id: m.accountId,
          provider: m.provider,
          price_id: m.priceId,
          product_id: m.productId,
          max_devices: m.maxDevices,
          license_type: m.licenseType,
          offset_days: m.offsetDays,
          fixed_expires_at: m.fixedExpiresAt,
          entitlements: m.entitlements === null ? null : encodeEntitlements(m.entitlements),
          created_at: m.createdAt,
          billing: m.billing,
          grace_days: m.graceDays,
        })
        .onConflict((oc) => oc.columns(['account_id', 'provider', 'price_id']).doNothing()),
    );
    return inserted === 1;
  }

  async listMappings(accountId: string, productId: string): Promise<PriceMapping[]> {
    const rows = await this.store.read.all(
      this.db.selectFrom('price_mappings').selectAll().where('account_id', '=', accountId).where('product_id', '=', productId).orderBy('created_at').orderBy('price_id'),
    );
    return rows.map(toMapping);
  }

  async deleteMapping(unit: Unit, accountId: string, productId: string, priceId: string): Promise<boolean> {
    const n = await executorOf(unit).run(
      this.db.deleteFrom('price_mappings').where('account_id', '=', accountId).where('product_id', '=', productId).where('price_id', '=', priceId),
    );
    return n > 0;
  }

  async mappingsFor(unit: Unit, accountId: string, provider: string, priceIds: string[]): Promise<PriceMapping[]> {
    if (priceIds.length === 0) return [];
    const rows = await executorOf(unit).all(
      this.db.selectFrom('price_mappings').selectAll().where('account_id', '=', accountId).where('provider', '=', provider).where('price_id', 'in', priceIds),
    );
    return rows.map(toMapping);
  }

  async findPurchaseBySession(accountId: string, provider: string, sessionId: string): Promise<Purchase | undefined> {
    const row = await this.store.read.first(
      this.db.selectFrom('purchases').selectAll().where('account_id', '=', accountId).where('provider', '=', provider).where('session_id', '=', sessionId),
    );
    return row && toPurchase(row, []);
  }

  async insertPurchase(unit: Unit, p: Purchase, emailNormalized: string | null): Promise<boolean> {
    const inserted = await executorOf(unit).run(
      this.db
        .insertInto('purchases')
        .values({
          id: p.id,
          account_id: p.accountId,
          provider: p.provider,
          session_id: p.sessionId,
          payment_id: p.paymentId,
          email: p.email,
          email_normalized: emailNormalized,
          amount_total: p.amountTotal,
          currency: p.currency,
          status: p.status,
          kind: p.kind,
          subscription_id: p.subscriptionId,
          invoice_id: p.invoiceId,
          created_at: p.createdAt,
          updated_at: p.createdAt,
        })
        // On PostgreSQL a concurrent insert of the same session waits for the other transaction, then skips.
        .onConflict((oc) => oc.columns(['account_id', 'provider', 'session_id']).doNothing()),
    );
    return inserted === 1;
  }

  async addPurchaseLicense(unit: Unit, purchaseId: string, lineItemId: string, licenseKey: string): Promise<void> {
    await executorOf(unit).run(this.db.insertInto('purchase_licenses').values({ purchase_id: purchaseId, line_item_id: lineItemId, license_key: licenseKey }));
  }

  async lockPurchase(unit: Unit, accountId: string, id: string): Promise<{ purchase: Purchase; fulfilledItems: Set<string> } | undefined> {
    const tx = executorOf(unit);
    const row = await tx.first(
      this.db
        .selectFrom('purchases')
        .selectAll()
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .$if(this.store.lockRows, (q) => q.forUpdate()),
    );
    if (!row) return undefined;
    const items = await tx.all(this.db.selectFrom('purchase_licenses').select('line_item_id').where('purchase_id', '=', id));
    return { purchase: (await this.withKeys(tx, [row]))[0]!, fulfilledItems: new Set(items.map((i) => i.line_item_id)) };
  }

  async lockPurchasesByPayment(unit: Unit, accountId: string, provider: string, paymentId: string): Promise<Purchase[]> {
    const tx = executorOf(unit);
    const rows = await tx.all(
      this.db
        .selectFrom('purchases')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('provider', '=', provider)
        .where('payment_id', '=', paymentId)
        .$if(this.store.lockRows, (q) => q.forUpdate()),
    );
    return this.withKeys(tx, rows);
  }

  async setPurchaseStatus(unit: Unit, id: string, status: PurchaseStatus, now: number): Promise<void> {
    await executorOf(unit).run(this.db.updateTable('purchases').set({ status, updated_at: now }).where('id', '=', id));
  }

  async lockPayment(unit: Unit, accountId: string, provider: string, paymentId: string): Promise<void> {
    // SQLite's units run one at a time already; PostgreSQL takes a transaction-scoped advisory lock.
    if (!this.store.lockRows) return;
    await executorOf(unit).first({ sql: 'select pg_advisory_xact_lock(hashtextextended($1, 0))', parameters: [`payment:${accountId}:${provider}:${paymentId}`] });
  }

  async rememberReversal(unit: Unit, accountId: string, provider: string, paymentId: string, reason: 'refunded' | 'disputed', now: number): Promise<void> {
    await executorOf(unit).run(
      this.db
        .insertInto('payment_reversals')
        .values({ account_id: accountId, provider, payment_id: paymentId, reason, created_at: now })
        .onConflict((oc) => oc.columns(['account_id', 'provider', 'payment_id']).doNothing()),
    );
  }

  async earlyReversal(unit: Unit, accountId: string, provider: string, paymentId: string): Promise<'refunded' | 'disputed' | undefined> {
    const row = await executorOf(unit).first(
      this.db.selectFrom('payment_reversals').select('reason').where('account_id', '=', accountId).where('provider', '=', provider).where('payment_id', '=', paymentId),
    );
    return row?.reason;
  }

  async listPurchases(accountId: string, limit: number, before?: { createdAt: number; id: string }): Promise<Purchase[]> {
    const rows = await this.store.read.all(
      this.db
        .selectFrom('purchases')
        .selectAll()
        .where('account_id', '=', accountId)
        .$if(before !== undefined, (q) =>
          q.where((eb) => eb.or([eb('created_at', '<', before!.createdAt), eb.and([eb('created_at', '=', before!.createdAt), eb('id', '<', before!.id)])])),
        )
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit),
    );
    return this.withKeys(this.store.read, rows);
  }

  async getPurchase(accountId: string, id: string): Promise<Purchase | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('purchases').selectAll().where('id', '=', id).where('account_id', '=', accountId));
    return row && (await this.withKeys(this.store.read, [row]))[0];
  }

  async findCustomerPurchase(scope: CustomerScope, id: string): Promise<Purchase | undefined> {
    const row = await this.store.read.first(
      this.db
        .selectFrom('purchases')
        .selectAll()
        .where('id', '=', id)
        .where('email_normalized', '=', scope.email)
        .$if(scope.accountId !== null, (q) => q.where('account_id', '=', scope.accountId!)),
    );
    return row && toPurchase(row, []);
  }

  async invoicedPurchases(scope: CustomerScope, licenseKeys: string[]): Promise<Map<string, string>> {
    const rows = await this.store.read.all(
      this.db
        .selectFrom('purchase_licenses as pl')
        .innerJoin('purchases as p', 'p.id', 'pl.purchase_id')
        .select(['pl.license_key', 'p.id'])
        .where('pl.license_key', 'in', licenseKeys)
        .where('p.email_normalized', '=', scope.email)
        .where('p.invoice_id', 'is not', null)
        .$if(scope.accountId !== null, (q) => q.where('p.account_id', '=', scope.accountId!)),
    );
    return new Map(rows.map((r) => [r.license_key, r.id]));
  }
}

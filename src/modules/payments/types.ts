import type { PurchaseSnapshot } from '../../core/events.ts';
import type { Unit } from '../../core/unit-of-work.ts';

/** The payments module's records and the storage the service needs (repository.ts implements it). */

export type PurchaseStatus = PurchaseSnapshot['status'];

export interface Connection {
  id: string;
  accountId: string;
  provider: string;
  livemode: boolean;
  webhookEndpointId: string;
  apiKeySealed: string;
  webhookSecretSealed: string;
  connectedAt: number;
}

export interface PriceMapping {
  accountId: string;
  provider: string;
  priceId: string;
  productId: string;
  maxDevices: number;
  licenseType: 'perpetual' | 'timed';
  offsetDays: number | null;
  fixedExpiresAt: number | null;
  /** The entitlements its licenses get; null: the product's defaults at purchase time. */
  entitlements: string[] | null;
  createdAt: number;
  billing: 'one_time' | 'subscription';
  /** Subscription mappings only (else null). */
  graceDays: number | null;
}

export interface Purchase {
  id: string;
  accountId: string;
  provider: string;
  sessionId: string;
  paymentId: string | null;
  email: string | null;
  amountTotal: number | null;
  currency: string | null;
  status: PurchaseStatus;
  kind: PurchaseSnapshot['kind'];
  /** A subscription-mode checkout's subscription. */
  subscriptionId: string | null;
  invoiceId: string | null;
  createdAt: number;
  licenseKeys: string[];
}

export interface PurchasePage {
  data: Purchase[];
  nextCursor: string | null;
}

/** Who may see a purchase's invoice in the portal: its buyer, within the session's scope. */
export interface CustomerScope {
  email: string;
  /** A private session shows one account's purchases only. */
  accountId: string | null;
}

/** Storage of payments; every query scoped to the account in SQL. */
export interface PaymentRepository {
  /** By id alone: the webhook URL names the connection (its signature then proves the sender). */
  findConnectionById(id: string): Promise<Connection | undefined>;
  findConnection(accountId: string, provider: string, unit?: Unit): Promise<Connection | undefined>;
  /** Replaces the account's connection to the provider; returns the one it replaced. */
  replaceConnection(unit: Unit, connection: Connection): Promise<Connection | undefined>;
  deleteConnection(unit: Unit, accountId: string, id: string): Promise<void>;
  findMapping(accountId: string, provider: string, priceId: string): Promise<PriceMapping | undefined>;
  /** False when the price is mapped already (the primary key decides, also under concurrency). */
  insertMapping(unit: Unit, mapping: PriceMapping): Promise<boolean>;
  listMappings(accountId: string, productId: string): Promise<PriceMapping[]>;
  deleteMapping(unit: Unit, accountId: string, productId: string, priceId: string): Promise<boolean>;
  mappingsFor(unit: Unit, accountId: string, provider: string, priceIds: string[]): Promise<PriceMapping[]>;
  findPurchaseBySession(accountId: string, provider: string, sessionId: string): Promise<Purchase | undefined>;
  /** False when the session has a purchase already (the unique key decides, also across processes). */
  insertPurchase(unit: Unit, purchase: Purchase, emailNormalized: string | null): Promise<boolean>;
  addPurchaseLicense(unit: Unit, purchaseId: string, lineItemId: string, licenseKey: string): Promise<void>;
  /** The account's purchase with its keys, locked until `unit` ends, and the line items that have a license. */
  lockPurchase(unit: Unit, accountId: string, id: string): Promise<{ purchase: Purchase; fulfilledItems: Set<string> } | undefined>;
  /** The purchases paid with `paymentId`, locked until `unit` ends. */
  lockPurchasesByPayment(unit: Unit, accountId: string, provider: string, paymentId: string): Promise<Purchase[]>;
  setPurchaseStatus(unit: Unit, id: string, status: PurchaseStatus, now: number): Promise<void>;
  /** Remembers a reversal whose purchase is not recorded yet (once per payment). */
  /**
   * Serializes, until the unit ends, every unit about one payment (its fulfilment and its reversal):
   * without it a refund and its checkout racing on PostgreSQL could each miss the other.
   */
  lockPayment(unit: Unit, accountId: string, provider: string, paymentId: string): Promise<void>;
  rememberReversal(unit: Unit, accountId: string, provider: string, paymentId: string, reason: 'refunded' | 'disputed', now: number): Promise<void>;
  earlyReversal(unit: Unit, accountId: string, provider: string, paymentId: string): Promise<'refunded' | 'disputed' | undefined>;
  listPurchases(accountId: string, limit: number, before?: { createdAt: number; id: string }): Promise<Purchase[]>;
  getPurchase(accountId: string, id: string): Promise<Purchase | undefined>;
  findCustomerPurchase(scope: CustomerScope, id: string): Promise<Purchase | undefined>;
  /** license key → id of its purchase, for the buyer's licenses whose purchase has an invoice. */
  invoicedPurchases(scope: CustomerScope, licenseKeys: string[]): Promise<Map<string, string>>;
}

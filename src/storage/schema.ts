import type { ColumnType, Generated, Selectable } from 'kysely';

/**
 * Table types shared by both stores. Timestamps are epoch milliseconds (bigint in PostgreSQL,
 * integer in SQLite) so both stores compare and sort them the same way. Booleans are written as
 * 0/1, which both stores accept, and read back through `bool()` (SQLite gives 0/1, PostgreSQL
 * true/false).
 */
type Bool = ColumnType<boolean | number, number, number>;

export interface AccountsTable {
  id: string;
  email: string;
  password_hash: string;
  plan: 'free' | 'plus';
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  key_hash: string;
  key_prefix: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
  /** 'full', 'read' or 'licenses' (migration 020; core/access.ts). */
  scope: ColumnType<'full' | 'read' | 'licenses', 'full' | 'read' | 'licenses' | undefined, 'full' | 'read' | 'licenses'>;
  /** After this the key is refused (null: never). */
  expires_at: number | null;
}

export interface ProductsTable {
  id: string;
  account_id: string;
  name: string;
  description: string;
  support_email: string | null;
  portal_show: Bool;
  portal_allow_device_reset: Bool;
  has_image: Bool;
  fallback_enabled: Bool;
  purchase_note: string | null;
  action_button_text: string | null;
  action_button_url: string | null;
  created_at: number;
  /** Portal device resets allowed per license within the window (migration 003). */
  portal_device_reset_limit: ColumnType<number, number | undefined, number>;
  portal_device_reset_window_days: ColumnType<number, number | undefined, number>;
  /** Entitlement codes new licenses get, joined by a space (migration 018). */
  default_entitlements: ColumnType<string, string | undefined, string>;
  /** Floating product: activations hold leases of `lease_seconds` (migration 018). */
  floating_enabled: ColumnType<boolean | number, number | undefined, number>;
  lease_seconds: ColumnType<number, number | undefined, number>;
  /** Trials from the public API (migration 022). */
  trial_enabled: ColumnType<boolean | number, number | undefined, number>;
  trial_days: ColumnType<number, number | undefined, number>;
  trial_max_devices: ColumnType<number, number | undefined, number>;
}

export interface LicensesTable {
  key: string;
  account_id: string;
  product_id: string;
  type: 'perpetual' | 'timed';
  expires_at: number | null;
  revoked: Bool;
  email: string | null;
  /** Lower-cased e-mail, indexed: the portal matches addresses case-insensitively. */
  email_normalized: string | null;
  max_devices: number;
  created_at: number;
  /** Entitlement codes joined by a space (migration 018). */
  entitlements: ColumnType<string, string | undefined, string>;
  /** The vendor's key/value strings, a JSON object (migration 018): server views only. */
  metadata: ColumnType<string, string | undefined, string>;
  /** Started as a trial from the public API (migration 022). */
  trial: ColumnType<boolean | number, number | undefined, number>;
}

/** One trial per product and device identifier, ever (migration 022). */
export interface TrialsTable {
  product_id: string;
  device_identifier: string;
  license_key: string;
  created_at: number;
}

/** On SQLite the table also has `search_id` (migration 034): its search row, kept by triggers only, never read here. */
export interface DevicesTable {
  license_key: string;
  identifier: string;
  name: string;
  activation_date: number;
  /** The activation's audit entry, held here while the device is active (migration 013); null once moved or from before it. */
  activation_id: string | null;
  /** Who activated the device: the actor as JSON. */
  activated_by: string | null;
  /** The name the device had when activated, once it has been renamed (null: its name). */
  activated_name: string | null;
  /** A floating product's lease end; null on a node-locked product (migration 018). */
  lease_expires_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** Last activation, validation, token or heartbeat, written at most once a minute except by heartbeats (migration 018). */
  last_seen_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Per-product license-token settings and key pair; `version` goes up on every change (caches compare it). */
export interface LicenseTokenConfigsTable {
  product_id: string;
  enabled: Bool;
  validity_seconds: number;
  expose_public_key: Bool;
  key_id: string | null;
  public_key_pem: string | null;
  /** The PKCS#8 private key, sealed with SecretBox (never stored in clear). */
  private_key_sealed: string | null;
  version: number;
  updated_at: number;
}

/** The general outbox (migration 004): jobs of several kinds, each with a JSON payload. */
export interface OutboxTable {
  id: string;
  /** Which consumer handles it: `mail`, `webhook`, `event:<consumer>`. */
  kind: string;
  payload: string;
  status: 'pending' | 'done' | 'dead';
  attempts: number;
  next_attempt_at: number;
  /** The worker holding the job until `claimed_until` (a lease: a crashed worker's claim expires); on a done job, the worker that did it. */
  claimed_by: string | null;
  claimed_until: number | null;
  last_error: string | null;
  created_at: number;
  done_at: number | null;
  /** Whose job it is (migration 016): the account, and the webhook endpoint a delivery goes to; the fair claim caps each. */
  account_id: string | null;
  target: string | null;
}

/** Portal access links and sessions; only the SHA-256 of a token is stored. */
export interface PortalTokensTable {
  token_hash: string;
  kind: 'link' | 'session';
  email_normalized: string;
  account_id: string | null;
  expires_at: number;
  created_at: number;
  /** A session's link (migration 009): signing out ends the link and its sessions. */
  link_hash: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface PortalLinkRequestsTable {
  email_normalized: string;
  requested_at: number;
  /** The requesting client's address (migration 009); null for requests before it. */
  client: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface PortalDeviceResetsTable {
  license_key: string;
  reset_at: number;
}

export interface ProductImagesTable {
  product_id: string;
  content_type: string;
  data: Buffer;
  etag: string;
  updated_at: number;
}

/** A payment provider connection (migration 005); the key and signing secret are sealed with SecretBox. */
export interface PaymentConnectionsTable {
  id: string;
  account_id: string;
  provider: string;
  livemode: Bool;
  webhook_endpoint_id: string;
  api_key_sealed: string;
  webhook_secret_sealed: string;
  connected_at: number;
}

export interface PriceMappingsTable {
  account_id: string;
  provider: string;
  price_id: string;
  product_id: string;
  max_devices: number;
  license_type: 'perpetual' | 'timed';
  offset_days: number | null;
  fixed_expires_at: number | null;
  created_at: number;
  /** Migration 017: how the price is paid; a subscription's licenses follow it. */
  billing: Generated<'one_time' | 'subscription'>;
  /** Subscription mappings: days a license keeps working after an unpaid period end. */
  grace_days: number | null;
  /** The entitlements licenses of this price get, joined by a space; null: the product's defaults (migration 018). */
  entitlements: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface PurchasesTable {
  id: string;
  account_id: string;
  provider: string;
  /** The provider's checkout session: unique per account and provider (the idempotency key). */
  session_id: string;
  /** The payment a refund or dispute names (Stripe: the PaymentIntent). */
  payment_id: string | null;
  email: string | null;
  email_normalized: string | null;
  amount_total: number | null;
  currency: string | null;
  status: 'fulfilled' | 'unmapped' | 'unmatched' | 'refunded' | 'disputed';
  invoice_id: string | null;
  created_at: number;
  updated_at: number;
  /** Migration 017. */
  kind: Generated<'new' | 'renewal' | 'upgrade' | 'subscription'>;
  /** Migration 021: the subscription a subscription-mode checkout started. */
  subscription_id: string | null;
}

export interface PurchaseLicensesTable {
  purchase_id: string;
  line_item_id: string;
  license_key: string;
}

/** A reversal (refund, dispute) that arrived before its purchase (migration 005). */
export interface PaymentReversalsTable {
  account_id: string;
  provider: string;
  payment_id: string;
  reason: 'refunded' | 'disputed';
  created_at: number;
}

/** A provider subscription the service follows, as last applied (migration 017). */
export interface ProviderSubscriptionsTable {
  account_id: string;
  provider: string;
  subscription_id: string;
  customer_id: string | null;
  status: string;
  current_period_end: number | null;
  cancel_at_period_end: Bool;
  /** Bumped by every unit that applies a state (optimistic concurrency: see the migration). */
  version: number;
  updated_at: number;
}

/** A license linked to one item of a provider subscription (migration 017). */
export interface LicenseSubscriptionsTable {
  license_key: string;
  account_id: string;
  provider: string;
  subscription_id: string;
  item_id: string;
  price_id: string;
  /** The grace of the mapping last applied (kept when the item's price loses its mapping). */
  grace_days: number;
  created_at: number;
}

/** A renewal or upgrade offered for a product's licenses (migration 021). */
export interface OffersTable {
  id: string;
  account_id: string;
  product_id: string;
  kind: 'renewal' | 'upgrade';
  name: string;
  provider: string;
  price_id: string;
  extend_days: number | null;
  target_product_id: string | null;
  max_devices: number | null;
  license_type: 'perpetual' | 'timed' | null;
  /** An upgrade's entitlements, joined by a space; null: the license keeps its own (migration 025). */
  entitlements: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: number;
}

/** Provider events applied, by id: a redelivery does nothing (migration 017). */
export interface ProviderEventsTable {
  account_id: string;
  provider: string;
  event_id: string;
  created_at: number;
}

/** Operator webhook endpoints (migration 007). */
export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  /** JSON array of event types, or ["*"]. */
  events: string;
  secret_sealed: string;
  enabled: Bool;
  disabled_at: number | null;
  failing_since: number | null;
  created_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  account_id: string;
  event_id: string;
  event_type: string;
  body: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  last_status_code: number | null;
  next_attempt_at: number | null;
  delivered_at: number | null;
  created_at: number;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempted_at: number;
  status_code: number | null;
  duration_ms: number;
  success: Bool;
  error: string | null;
  /** JSON object (migration 031): the headers sent, the signature included (never the secret). */
  request_headers: string | null;
  /** JSON object: the answer's headers, null when no answer came. */
  response_headers: string | null;
  /** The answer's first 4 KiB, as UTF-8. */
  response_body: string | null;
  /** Whether the answer had more than `response_body` holds. */
  response_truncated: ColumnType<boolean | number, number | undefined, number>;
}

/** The audit log of license changes (migration 007); no foreign key: a deleted license's rows stay. */
export interface AuditEventsTable {
  id: string;
  account_id: string;
  license_key: string;
  type: string;
  actor: string;
  changes: string | null;
  created_at: number;
}

/** Server-API idempotency keys (see http/idempotency.ts); a null status means still in flight. */
export interface IdempotencyKeysTable {
  /**
   * SQLite only (migration 011): the row's place in the order rows were written, its rowid. The
   * SQLite store finds a key's row through an index in memory (modules/idempotency/sqlite-keys.ts);
   * PostgreSQL keys the rows by (account_id, idem_key) and has no such column.
   */
  id: Generated<number>;
  account_id: string;
  idem_key: string;
  /** SQLite only (migration 011): modules/idempotency/key-hash.ts of the account and key, for that index. */
  key_hash: ColumnType<number, number | undefined, never>;
  request_hash: string;
  response_status: number | null;
  response_type: string | null;
  response_body: string | null;
  locked_until: number;
  expires_at: number;
}

/** Dashboard sessions (migration 006): only the SHA-256 of the cookie's value is stored; `id` is the session's non-secret name. */
export interface DashboardSessionsTable {
  id: string;
  token_hash: string;
  account_id: string;
  created_at: number;
  last_seen_at: number;
  /** Whose session: a member's id, or the account's id for its first owner (migration 024). */
  member_id: string | null;
}

/** Members invited into an account (migration 024); the account's first owner is the account itself. */
export interface MembersTable {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  role: 'owner' | 'admin' | 'support' | 'viewer';
  created_at: number;
}

/** Two-factor sign-in per member (migration 024); `member_id` is the account's id for its first owner. */
export interface TwoFactorTable {
  member_id: string;
  account_id: string;
  secret_sealed: string;
  enabled_at: number | null;
  last_step: number | null;
  created_at: number;
}

export interface TwoFactorRecoveryCodesTable {
  member_id: string;
  code_hash: string;
  account_id: string;
  used_at: number | null;
}

export interface TwoFactorRequiredTable {
  account_id: string;
  created_at: number;
}

/** A password accepted, a second factor awaited (migration 024). */
export interface SignInChallengesTable {
  token_hash: string;
  account_id: string;
  member_id: string;
  attempts: number;
  expires_at: number;
}

/** Single-use invitations, by the SHA-256 of the link's secret (migration 024). */
export interface MemberInvitationsTable {
  token_hash: string;
  id: string;
  account_id: string;
  email: string;
  role: 'owner' | 'admin' | 'support' | 'viewer';
  invited_by: string;
  expires_at: number;
  created_at: number;
}

/** Single-use password-reset links (migration 006), by the SHA-256 of the link's token. */
export interface DashboardPasswordResetsTable {
  token_hash: string;
  account_id: string;
  /** Whose sign-in (migration 032): an invited member's id, or the account's (null: links from before). */
  member_id: string | null;
  expires_at: number;
  created_at: number;
}

/** An account's e-mail change waiting for the new address to confirm it (migration 012). */
export interface DashboardEmailChangesTable {
  token_hash: string;
  account_id: string;
  new_email: string;
  expires_at: number;
  created_at: number;
}

/** Activations and validations per product and UTC day (days since the epoch), flushed from memory (migration 006). */
export interface ActivityDailyTable {
  product_id: string;
  day: number;
  account_id: string;
  activations: number;
  validations: number;
}

/** An account's branding (migration 032): any field null when not set. */
export interface AccountBrandingTable {
  account_id: string;
  display_name: string | null;
  accent_color: string | null;
  logo_type: string | null;
  logo_data: Buffer | null;
  logo_etag: string | null;
  updated_at: number;
}

/** The team's log: member management, by whom (migration 032). */
export interface MemberEventsTable {
  id: string;
  account_id: string;
  type: string;
  actor: string;
  changes: string;
  created_at: number;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  products: ProductsTable;
  licenses: LicensesTable;
  devices: DevicesTable;
  outbox: OutboxTable;
  portal_tokens: PortalTokensTable;
  portal_link_requests: PortalLinkRequestsTable;
  portal_device_resets: PortalDeviceResetsTable;
  product_images: ProductImagesTable;
  license_token_configs: LicenseTokenConfigsTable;
  payment_connections: PaymentConnectionsTable;
  price_mappings: PriceMappingsTable;
  purchases: PurchasesTable;
  purchase_licenses: PurchaseLicensesTable;
  payment_reversals: PaymentReversalsTable;
  provider_subscriptions: ProviderSubscriptionsTable;
  license_subscriptions: LicenseSubscriptionsTable;
  provider_events: ProviderEventsTable;
  offers: OffersTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  audit_events: AuditEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  dashboard_sessions: DashboardSessionsTable;
  members: MembersTable;
  member_invitations: MemberInvitationsTable;
  two_factor: TwoFactorTable;
  two_factor_recovery_codes: TwoFactorRecoveryCodesTable;
  two_factor_required: TwoFactorRequiredTable;
  sign_in_challenges: SignInChallengesTable;
  dashboard_password_resets: DashboardPasswordResetsTable;
  dashboard_email_changes: DashboardEmailChangesTable;
  activity_daily: ActivityDailyTable;
  trials: TrialsTable;
  account_branding: AccountBrandingTable;
  member_events: MemberEventsTable;
}

export const bool = (value: boolean | number): boolean => value === true || value === 1;
export const flag = (value: boolean): number => (value ? 1 : 0);

export type ProductRow = Selectable<ProductsTable>;
export type LicenseRow = Selectable<LicensesTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type DeviceRow = Selectable<DevicesTable>;

import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import * as m001 from './001_core.ts';
import * as m002LicenseTokens from './002_license_tokens.ts';
import * as m003PortalMail from './003_portal_mail.ts';
import * as m004Outbox from './004_outbox.ts';
import * as m005Payments from './005_payments.ts';
import * as m006Dashboard from './006_dashboard.ts';
import * as m007WebhooksAudit from './007_webhooks_audit.ts';
import * as m008Idempotency from './008_idempotency.ts';
import * as m009Hardening from './009_hardening.ts';
import * as m010AuditLicenseIndex from './010_audit_license_index.ts';
import * as m011IdempotencyLog from './011_idempotency_log.ts';
import * as m012EmailChanges from './012_email_changes.ts';
import * as m013DeviceActivations from './013_device_activations.ts';
import * as m014LicenseChangeFeed from './014_license_change_feed.ts';
import * as m015AccountId from './015_account_id.ts';
import * as m016OutboxFairness from './016_outbox_fairness.ts';
import * as m017Subscriptions from './017_subscriptions.ts';
import * as m018LicensingModel from './018_licensing_model.ts';
import * as m019AccountAudit from './019_account_audit.ts';
import * as m020ApiKeyScopes from './020_api_key_scopes.ts';
import * as m021PurchaseSubscription from './021_purchase_subscription_offers.ts';
import * as m022Trials from './022_trials.ts';
import * as m024Members from './024_members.ts';
import * as m025OfferEntitlements from './025_offer_entitlements.ts';
import * as m029LicenseSearch from './029_license_search.ts';
import * as m031WebhookAttemptExchange from './031_webhook_attempt_exchange.ts';
import * as m032BrandingTeamLog from './032_branding_team_log.ts';
import * as m034SearchWrites from './034_search_writes.ts';
import * as m035QuietDeviceInserts from './035_quiet_device_inserts.ts';

/**
 * Versioned migrations, in order. A new migration is a new file added here; applied ones are
 * never edited. Kysely's migrator takes a lock (an advisory lock on PostgreSQL), so several
 * processes starting at once on one database apply each migration exactly once.
 */
export const migrations: Record<string, Migration> = {
  '001_core': m001,
  '002_license_tokens': m002LicenseTokens,
  '003_portal_mail': m003PortalMail,
  '004_outbox': m004Outbox,
  '005_payments': m005Payments,
  '006_dashboard': m006Dashboard,
  '007_webhooks_audit': m007WebhooksAudit,
  '008_idempotency': m008Idempotency,
  '009_hardening': m009Hardening,
  '010_audit_license_index': m010AuditLicenseIndex,
  '011_idempotency_log': m011IdempotencyLog,
  '012_email_changes': m012EmailChanges,
  '013_device_activations': m013DeviceActivations,
  '014_license_change_feed': m014LicenseChangeFeed,
  '015_account_id': m015AccountId,
  '016_outbox_fairness': m016OutboxFairness,
  '017_subscriptions': m017Subscriptions,
  '018_licensing_model': m018LicensingModel,
  '019_account_audit': m019AccountAudit,
  '020_api_key_scopes': m020ApiKeyScopes,
  '021_purchase_subscription_offers': m021PurchaseSubscription,
  '022_trials': m022Trials,
  '024_members': m024Members,
  '025_offer_entitlements': m025OfferEntitlements,
  '029_license_search': m029LicenseSearch,
  '031_webhook_attempt_exchange': m031WebhookAttemptExchange,
  '032_branding_team_log': m032BrandingTeamLog,
  '034_search_writes': m034SearchWrites,
  '035_quiet_device_inserts': m035QuietDeviceInserts,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Applies every migration up to `target` (the latest when absent); tests of a migration stop before it. */
export async function migrateToLatest(db: Kysely<any>, target?: string): Promise<void> {
  const migrator = new Migrator({ db, provider, migrationTableName: 'tessera_migrations', migrationLockTableName: 'tessera_migrations_lock' });
  const { error, results } = target ? await migrator.migrateTo(target) : await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, { cause: error });
  }
}

import type { WebhookConfig } from './config.ts';
import { SecretBox } from './core/secret-box.ts';
import { EventBus, type Unit } from './core/unit-of-work.ts';
import { SqlAccountRepository } from './modules/accounts/repository.ts';
import { AccountService } from './modules/accounts/service.ts';
import { SqlActivityRepository } from './modules/activity/repository.ts';
import { ActivityService } from './modules/activity/service.ts';
import { SqlOverviewRepository } from './modules/overview/repository.ts';
import { OverviewService } from './modules/overview/service.ts';
import { SqlDashboardRepository } from './modules/dashboard/repository.ts';
import { DashboardAuthService } from './modules/dashboard/service.ts';
import { SqlMemberRepository, SqlTeamLogRepository } from './modules/members/repository.ts';
import { TeamLog } from './modules/members/team-log.ts';
import { MemberService } from './modules/members/service.ts';
import { SqlTwoFactorRepository } from './modules/two-factor/repository.ts';
import { TwoFactorService } from './modules/two-factor/service.ts';
import { SqlAuditRepository } from './modules/audit/repository.ts';
import { AuditService } from './modules/audit/service.ts';
import { SqlApiKeyRepository } from './modules/api-keys/repository.ts';
import { ApiKeyService } from './modules/api-keys/service.ts';
import { idempotencyRepository } from './modules/idempotency/repository.ts';
import { IDEMPOTENCY_PURGE_BATCH, IdempotencyService } from './modules/idempotency/service.ts';
import { SqlLicenseTokenRepository } from './modules/license-tokens/repository.ts';
import { LicenseTokenService } from './modules/license-tokens/service.ts';
import { SqlLicenseRepository } from './modules/licenses/repository.ts';
import { LicenseService } from './modules/licenses/service.ts';
import { LifecycleMailer } from './modules/mail/lifecycle.ts';
import { PurchaseMailer } from './modules/mail/purchase.ts';
import { MailQueue } from './modules/mail/queue.ts';
import { mailBrandOf } from './modules/mail/brand.ts';
import { SqlBrandingRepository } from './modules/branding/repository.ts';
import { BrandingService } from './modules/branding/service.ts';
import { type EventConsumer, deliverEvents } from './modules/outbox/event-delivery.ts';
import { Outbox } from './modules/outbox/outbox.ts';
import type { Housekeeping, JobConsumer } from './modules/outbox/worker.ts';
import { SqlPaymentRepository } from './modules/payments/repository.ts';
import { DELETE_ENDPOINT_JOB, deleteEndpointConsumer } from './modules/payments/endpoint-jobs.ts';
import type { PaymentProvider } from './modules/payments/provider.ts';
import { PaymentService } from './modules/payments/service.ts';
import { LemonSqueezyProvider } from './modules/payments/lemonsqueezy.ts';
import { StripeProvider } from './modules/payments/stripe.ts';
import { PolarProvider } from './modules/payments/polar.ts';
import { SqlPortalRepository } from './modules/portal/repository.ts';
import { PortalService } from './modules/portal/service.ts';
import { SqlOfferRepository } from './modules/offers/repository.ts';
import { OfferService } from './modules/offers/service.ts';
import { SqlSubscriptionRepository } from './modules/subscriptions/repository.ts';
import { SubscriptionService } from './modules/subscriptions/service.ts';
import { SqlProductImageRepository } from './modules/product-images/repository.ts';
import { ProductImageService } from './modules/product-images/service.ts';
import { SqlProductRepository } from './modules/products/repository.ts';
import { ProductService } from './modules/products/service.ts';
import { WebhookDeliverer } from './modules/webhooks/delivery.ts';
import { SqlWebhookRepository } from './modules/webhooks/repository.ts';
import { WebhookSender } from './modules/webhooks/sender.ts';
import { WEBHOOK_JOB, WebhookService } from './modules/webhooks/service.ts';
import type { Store } from './storage/index.ts';
import { StoreUnits } from './storage/unit-of-work.ts';
import { SqlTrialRepository } from './modules/trials/repository.ts';
import { TrialService } from './modules/trials/service.ts';

export interface ServiceOptions {
  /** Links in e-mails point here (config.baseUrl; this default is BASE_URL's own default). */
  baseUrl?: string;
  /** Every service's time (tests inject one). */
  clock?: () => number;
  /** Consumers of domain events, delivered through the outbox after commit. */
  eventConsumers?: EventConsumer[];
  /** STRIPE_API_URL (config.stripeApiUrl): where the stripe package sends its calls. */
  stripeApiUrl?: string;
  /** STRIPE_CLI_WEBHOOK_SECRET (development): `stripe listen`'s signing secret, accepted for test-mode connections. */
  stripeCliWebhookSecret?: string;
  /** LEMONSQUEEZY_API_URL (config.lemonSqueezyApiUrl): where the Lemon Squeezy package's calls go. */
  lemonSqueezyApiUrl?: string;
  /** POLAR_API_URL (config.polarApiUrl): where @polar-sh/sdk sends its calls. */
  polarApiUrl?: string;
  /** Operator webhooks (config.webhooks; these defaults are the environment's own defaults). */
  webhooks?: WebhookConfig;
  /** config.auditRetentionDays. */
  auditRetentionDays?: number;
  /** config.validationCacheEntries: validation rows kept in memory on PostgreSQL (0: none, the default here). */
  validationCacheEntries?: number;
  /** Payment providers beside Stripe's adapter (tests prove the seam with one). */
  paymentProviders?: PaymentProvider[];
}

const DAY = 24 * 60 * 60_000;
/** Webhook endpoints' and payment connections' secrets kept opened (SecretBox): a few hundred bytes each. */
const OPENED_SECRETS = 1000;
const DEFAULT_WEBHOOKS: WebhookConfig = { allowPrivate: false, connectTimeoutMs: 5000, timeoutMs: 10_000, maxSockets: 32, retentionDays: 30 };

/**
 * Wires every domain service to its repository, the unit-of-work runner and the event bus on one
 * store: used by the server and the CLI. `secretKey` is the server's root secret
 * (config.secretKey): secrets at rest are sealed under keys derived from it.
 */
export function createServices(store: Store, secretKey: Buffer, onBackgroundError: (error: unknown) => void = () => {}, options: ServiceOptions = {}) {
  const baseUrl = options.baseUrl ?? 'http://127.0.0.1:3000';
  const clock = options.clock ?? Date.now;
  const events = new EventBus();
  const units = new StoreUnits(store, events);
  const outbox = new Outbox(store, clock);
  /** Outbox job kinds this process works, beside e-mail (which needs the app's transport). */
  const jobConsumers: Record<string, JobConsumer> = {};
  for (const consumer of options.eventConsumers ?? []) deliverEvents(events, outbox, jobConsumers, consumer);

  const branding = new BrandingService(new SqlBrandingRepository(store), units, clock);
  const mail = new MailQueue(outbox, async (accountId, unit) => mailBrandOf(await branding.get(accountId, unit), baseUrl));
  const accounts = new AccountService(new SqlAccountRepository(store), units, clock);
  const apiKeys = new ApiKeyService(new SqlApiKeyRepository(store), units, onBackgroundError, clock);
  const products = new ProductService(new SqlProductRepository(store), units, clock);
  const purchaseMail = new PurchaseMailer(mail, products, accounts, baseUrl);
  const licenseRepository = new SqlLicenseRepository(store, { validationCacheEntries: options.validationCacheEntries });
  const licenses = new LicenseService(licenseRepository, units, products, purchaseMail, clock);
  const validationCache = licenseRepository.validationCache;
  products.bindLicenses(licenses);

  // In-unit subscribers, in this order: the audit entry, then the webhook deliveries of the change.
  /** How long the license audit log and the team's log are kept (AUDIT_RETENTION_DAYS). */
  const auditKeepMs = (options.auditRetentionDays ?? 365) * DAY;
  const audit = new AuditService(new SqlAuditRepository(store), licenses, clock, auditKeepMs);
  events.subscribe((event, unit) => audit.onEvent(event, unit));
  const webhookSettings = options.webhooks ?? DEFAULT_WEBHOOKS;
  const webhookRepo = new SqlWebhookRepository(store);
  const webhookSecrets = new SecretBox(secretKey, 'webhook-secrets', { remember: OPENED_SECRETS });
  const webhooks = new WebhookService(webhookRepo, units, outbox, licenses, webhookSecrets, webhookSettings.allowPrivate, clock);
  events.subscribe((event, unit) => webhooks.onEvent(event, unit));
  const webhookDeliverer = new WebhookDeliverer(webhookRepo, units, new WebhookSender(webhookSettings), webhookSecrets, accounts, mail, outbox, clock);
  jobConsumers[WEBHOOK_JOB] = webhookDeliverer;
  const idempotency = new IdempotencyService(idempotencyRepository(store), (work) => store.write(work, { awaitSync: false }), clock, new SecretBox(secretKey, 'idempotent-answers'));
  /** Upkeep the outbox worker runs about hourly. */
  const housekeeping: Housekeeping[] = [
    (now) => audit.purge(now),
    (now) => webhooks.purge(now, webhookSettings.retentionDays * DAY),
    async () => {
      // A thousand at a time, until the expired keys are gone.
      while ((await idempotency.purgeExpired()) === IDEMPOTENCY_PURGE_BATCH);
    },
  ];
  const licenseTokens = new LicenseTokenService(new SqlLicenseTokenRepository(store), units, products, licenses, new SecretBox(secretKey, 'license-token-keys'), { clock });
  const trials = new TrialService(new SqlTrialRepository(store), units, products, licenses, clock);
  const productImages = new ProductImageService(new SqlProductImageRepository(store), units, products, accounts, clock);
  const portal = new PortalService(new SqlPortalRepository(store), units, mail, licenses, baseUrl, clock);
  const lifecycleMail = new LifecycleMailer(mail, products, accounts, baseUrl);
  const subscriptions = new SubscriptionService(new SqlSubscriptionRepository(store), units, licenses, products, lifecycleMail, clock);
  const offers = new OfferService(new SqlOfferRepository(store), units, products, licenses, lifecycleMail, clock);
  const payments = new PaymentService(
    new SqlPaymentRepository(store),
    units,
    [new StripeProvider({ apiUrl: options.stripeApiUrl }), new LemonSqueezyProvider({ apiUrl: options.lemonSqueezyApiUrl }), new PolarProvider({ apiUrl: options.polarApiUrl }), ...(options.paymentProviders ?? [])],
    products,
    licenses,
    subscriptions,
    offers,
    new SecretBox(secretKey, 'payment-providers', { remember: OPENED_SECRETS }),
    outbox,
    { baseUrl, onBackgroundError, clock, cliSecrets: options.stripeCliWebhookSecret ? { stripe: options.stripeCliWebhookSecret } : {} },
  );
  jobConsumers[DELETE_ENDPOINT_JOB] = deleteEndpointConsumer((job) => payments.deleteEndpoint(job));
  const dashboardRepository = new SqlDashboardRepository(store);
  const teamLog = new TeamLog(new SqlTeamLogRepository(store), clock, auditKeepMs);
  housekeeping.push((now) => teamLog.purge(now));
  const twoFactor = new TwoFactorService(new SqlTwoFactorRepository(store), units, new SecretBox(secretKey, 'two-factor'), teamLog, clock);
  const memberRemoved = async (unit: Unit, memberId: string) => {
    await dashboardRepository.endSessionsOfMember(unit, memberId);
    await dashboardRepository.deleteResetsOf(unit, memberId);
    await twoFactor.forget(unit, memberId);
  };
  const members = new MemberService(new SqlMemberRepository(store), units, accounts, memberRemoved, mail, baseUrl, teamLog, clock);
  const dashboard = new DashboardAuthService(dashboardRepository, units, accounts, members, twoFactor, mail, baseUrl, clock);
  const activity = new ActivityService(new SqlActivityRepository(store), units, clock);
  const overview = new OverviewService(new SqlOverviewRepository(store), activity, audit, clock);
  return { store, clock, units, events, outbox, validationCache, jobConsumers, housekeeping, audit, webhooks, webhookDeliverer, mail, accounts, apiKeys, products, licenses, licenseTokens, trials, purchaseMail, productImages, portal, payments, subscriptions, offers, lifecycleMail, idempotency, dashboard, overview, members, twoFactor, activity, branding, teamLog };
}

export type Services = ReturnType<typeof createServices>;

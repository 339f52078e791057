import { SecretBox } from './core/secret-box.ts';
import { EventBus } from './core/unit-of-work.ts';
import { SqlAccountRepository } from './modules/accounts/repository.ts';
import { AccountService } from './modules/accounts/service.ts';
import { SqlActivityRepository } from './modules/activity/repository.ts';
import { ActivityService } from './modules/activity/service.ts';
import { SqlDashboardRepository } from './modules/dashboard/repository.ts';
import { DashboardAuthService } from './modules/dashboard/service.ts';
import { SqlApiKeyRepository } from './modules/api-keys/repository.ts';
import { ApiKeyService } from './modules/api-keys/service.ts';
import { SqlLicenseTokenRepository } from './modules/license-tokens/repository.ts';
import { LicenseTokenService } from './modules/license-tokens/service.ts';
import { SqlLicenseRepository } from './modules/licenses/repository.ts';
import { LicenseService } from './modules/licenses/service.ts';
import { PurchaseMailer } from './modules/mail/purchase.ts';
import { MailQueue } from './modules/mail/queue.ts';
import { type EventConsumer, deliverEvents } from './modules/outbox/event-delivery.ts';
import { Outbox } from './modules/outbox/outbox.ts';
import type { JobConsumer } from './modules/outbox/worker.ts';
import { SqlPortalRepository } from './modules/portal/repository.ts';
import { PortalService } from './modules/portal/service.ts';
import { SqlProductImageRepository } from './modules/product-images/repository.ts';
import { ProductImageService } from './modules/product-images/service.ts';
import { SqlProductRepository } from './modules/products/repository.ts';
import { ProductService } from './modules/products/service.ts';
import type { Store } from './storage/index.ts';
import { StoreUnits } from './storage/unit-of-work.ts';

export interface ServiceOptions {
  /** Links in e-mails point here (config.baseUrl; this default is BASE_URL's own default). */
  baseUrl?: string;
  /** Every service's time (tests inject one). */
  clock?: () => number;
  /** Consumers of domain events, delivered through the outbox after commit. */
  eventConsumers?: EventConsumer[];
}

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

  const mail = new MailQueue(outbox);
  const accounts = new AccountService(new SqlAccountRepository(store), units, clock);
  const apiKeys = new ApiKeyService(new SqlApiKeyRepository(store), units, onBackgroundError, clock);
  const products = new ProductService(new SqlProductRepository(store), units, clock);
  const purchaseMail = new PurchaseMailer(mail, products, accounts, baseUrl);
  const licenses = new LicenseService(new SqlLicenseRepository(store), units, products, purchaseMail, clock);
  products.bindLicenses(licenses);
  const licenseTokens = new LicenseTokenService(new SqlLicenseTokenRepository(store), units, products, licenses, new SecretBox(secretKey, 'license-token-keys'), { clock });
  const productImages = new ProductImageService(new SqlProductImageRepository(store), units, products, accounts, clock);
  const portal = new PortalService(new SqlPortalRepository(store), units, mail, licenses, baseUrl, clock);
  const dashboard = new DashboardAuthService(new SqlDashboardRepository(store), units, accounts, mail, baseUrl, clock);
  const activity = new ActivityService(new SqlActivityRepository(store), units, clock);
  return { store, clock, units, events, outbox, jobConsumers, mail, accounts, apiKeys, products, licenses, licenseTokens, purchaseMail, productImages, portal, dashboard, activity };
}

export type Services = ReturnType<typeof createServices>;

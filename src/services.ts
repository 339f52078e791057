import { SqlAccountRepository } from './modules/accounts/repository.ts';
import { AccountService } from './modules/accounts/service.ts';
import { SqlApiKeyRepository } from './modules/api-keys/repository.ts';
import { ApiKeyService } from './modules/api-keys/service.ts';
import { SqlLicenseRepository } from './modules/licenses/repository.ts';
import { LicenseService } from './modules/licenses/service.ts';
import { SqlProductRepository } from './modules/products/repository.ts';
import { ProductService } from './modules/products/service.ts';
import { SecretBox } from './core/secret-box.ts';
import { SqlLicenseTokenRepository } from './modules/license-tokens/repository.ts';
import { LicenseTokenService } from './modules/license-tokens/service.ts';
import { Outbox } from './modules/mail/outbox.ts';
import { PurchaseMailer } from './modules/mail/purchase.ts';
import { SqlPortalRepository } from './modules/portal/repository.ts';
import { PortalService } from './modules/portal/service.ts';
import { SqlProductImageRepository } from './modules/product-images/repository.ts';
import { ProductImageService } from './modules/product-images/service.ts';
import type { Store } from './storage/index.ts';

/**
 * Wires every domain service to its repository on one store: used by the server and the CLI.
 * `secretKey` is the server's root secret (config.secretKey): secrets at rest are sealed under keys derived from it.
 */
export function createServices(
  store: Store,
  secretKey: Buffer,
  onBackgroundError: (error: unknown) => void = () => {},
  // Links in e-mails point here (config.baseUrl; this default is BASE_URL's own default).
  links: { baseUrl: string } = { baseUrl: 'http://127.0.0.1:3000' },
) {
  const accounts = new AccountService(new SqlAccountRepository(store));
  const apiKeys = new ApiKeyService(new SqlApiKeyRepository(store), onBackgroundError);
  const products = new ProductService(new SqlProductRepository(store));
  const outbox = new Outbox(store);
  const purchaseMail = new PurchaseMailer(outbox, products, accounts, links.baseUrl);
  const licenses = new LicenseService(new SqlLicenseRepository(store), products, purchaseMail);
  const licenseTokens = new LicenseTokenService(new SqlLicenseTokenRepository(store), products, licenses, new SecretBox(secretKey, 'license-token-keys'));
  const productImages = new ProductImageService(new SqlProductImageRepository(store), products, accounts);
  const portal = new PortalService(new SqlPortalRepository(store), outbox, links.baseUrl);
  return { store, accounts, apiKeys, products, licenses, licenseTokens, outbox, purchaseMail, productImages, portal };
}

export type Services = ReturnType<typeof createServices>;

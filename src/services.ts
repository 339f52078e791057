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
import type { Store } from './storage/index.ts';

/**
 * Wires every domain service to its repository on one store: used by the server and the CLI.
 * `secretKey` is the server's root secret (config.secretKey): secrets at rest are sealed under keys derived from it.
 */
export function createServices(store: Store, secretKey: Buffer, onBackgroundError: (error: unknown) => void = () => {}) {
  const accounts = new AccountService(new SqlAccountRepository(store));
  const apiKeys = new ApiKeyService(new SqlApiKeyRepository(store), onBackgroundError);
  const products = new ProductService(new SqlProductRepository(store));
  const licenses = new LicenseService(new SqlLicenseRepository(store), products);
  const licenseTokens = new LicenseTokenService(new SqlLicenseTokenRepository(store), products, licenses, new SecretBox(secretKey, 'license-token-keys'));
  return { store, accounts, apiKeys, products, licenses, licenseTokens };
}

export type Services = ReturnType<typeof createServices>;

import { SqlAccountRepository } from './modules/accounts/repository.ts';
import { AccountService } from './modules/accounts/service.ts';
import { SqlApiKeyRepository } from './modules/api-keys/repository.ts';
import { ApiKeyService } from './modules/api-keys/service.ts';
import { SqlLicenseRepository } from './modules/licenses/repository.ts';
import { LicenseService } from './modules/licenses/service.ts';
import { SqlProductRepository } from './modules/products/repository.ts';
import { ProductService } from './modules/products/service.ts';
import type { Store } from './storage/index.ts';

/** Wires every domain service to its repository on one store: used by the server and the CLI. */
export function createServices(store: Store, onBackgroundError: (error: unknown) => void = () => {}) {
  const accounts = new AccountService(new SqlAccountRepository(store));
  const apiKeys = new ApiKeyService(new SqlApiKeyRepository(store), onBackgroundError);
  const products = new ProductService(new SqlProductRepository(store));
  const licenses = new LicenseService(new SqlLicenseRepository(store), products);
  return { store, accounts, apiKeys, products, licenses };
}

export type Services = ReturnType<typeof createServices>;

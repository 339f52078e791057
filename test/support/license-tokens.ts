import { importJWK, type JWK, jwtVerify } from 'jose';
import { SecretBox } from '../../src/core/secret-box.ts';
import { SqlLicenseTokenRepository } from '../../src/modules/license-tokens/repository.ts';
import { LicenseTokenService, type LicenseTokenServiceOptions } from '../../src/modules/license-tokens/service.ts';
import { createServices, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { call, type Tenant, type TestContext } from './app.ts';

/** Sets a product's token config over the server API and returns the config. */
export async function configureTokens(ctx: TestContext, tenant: Tenant, productId: string, json: Record<string, unknown> = { enabled: true }) {
  const res = await call(ctx, { method: 'PUT', url: `/api/v1/products/${productId}/license-token`, headers: tenant.auth, json });
  if (res.status !== 200) throw new Error(`configureTokens: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { enabled: boolean; validitySeconds: number; keyId: string; publicKeyJwk: JWK & { kid: string }; publicKeyPem: string };
}

export const publicActivate = (ctx: TestContext, licenseKey: string, productId: unknown, deviceIdentifier = 'dev-1', deviceName = 'Laptop') =>
  call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey, deviceIdentifier, deviceName, productId } });

export const refreshToken = (ctx: TestContext, licenseKey: string, productId: unknown, deviceIdentifier = 'dev-1') =>
  call(ctx, { method: 'POST', url: '/api/v1/public/licenses/token', json: { licenseKey, deviceIdentifier, productId } });

export const replaceKeyPair = (ctx: TestContext, tenant: Tenant, productId: string, json: Record<string, unknown> = {}) =>
  call(ctx, { method: 'POST', url: `/api/v1/products/${productId}/license-token/key-pair`, headers: tenant.auth, json });

export const getTokenConfig = (ctx: TestContext, tenant: Tenant, productId: string) =>
  call(ctx, { method: 'GET', url: `/api/v1/products/${productId}/license-token`, headers: tenant.auth });

export const getPublicKey = (ctx: TestContext, productId: string) =>
  call(ctx, { method: 'GET', url: `/api/v1/public/products/${productId}/license-token/public-key` });

/** Verifies a token the way any client would: jose, given only the published JWK. */
export async function verifyWithJwk(token: string, jwk: JWK) {
  return jwtVerify(token, await importJWK(jwk, 'ES256'), { algorithms: ['ES256'] });
}

/**
 * The services of another server process on `store`, with the token service's clock (and
 * optionally its revalidation interval) under the test's control: createServices takes no
 * LicenseTokenService options, so its token service is swapped for one built the same way.
 */
export function servicesWithTokenOptions(store: Store, secretKey: Buffer, options: LicenseTokenServiceOptions): Services {
  const services = createServices(store, secretKey);
  const licenseTokens = new LicenseTokenService(
    new SqlLicenseTokenRepository(store),
    services.units,
    services.products,
    services.licenses,
    new SecretBox(secretKey, 'license-token-keys'),
    options,
  );
  return { ...services, licenseTokens };
}

/** A clock that moves only when told to. */
export function manualClock(start = Date.now()) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

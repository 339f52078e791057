import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildApp, type AppOptions } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createServices, type ServiceOptions, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { createTestDatabase, type StoreKind, type TestDatabase } from './stores.ts';

export interface TestContext {
  kind: StoreKind;
  app: FastifyInstance;
  store: Store;
  services: Services;
  config: Config;
  database: TestDatabase;
}

export interface Tenant {
  accountId: string;
  email: string;
  apiKey: string;
  /** Headers for the server API. */
  auth: Record<string, string>;
}

/**
 * One app on a fresh database for a describe block, built in beforeAll and torn down in
 * afterAll. `extra` lets a suite change config (e.g. turn rate limits on) or add app options.
 */
export function useTestApp(kind: StoreKind, extra: { env?: Record<string, string>; app?: Partial<AppOptions>; clock?: () => number; services?: Partial<ServiceOptions> } = {}): TestContext {
  const ctx = {} as TestContext;
  beforeAll(async () => {
    ctx.kind = kind;
    ctx.database = await createTestDatabase(kind);
    ctx.config = loadConfig({ RATE_LIMIT: 'off', ...ctx.database.env, ...extra.env });
    ctx.store = await ctx.database.open();
    ctx.services = createServices(ctx.store, ctx.config.secretKey, undefined, { ...ctx.config, ...(extra.clock ? { clock: extra.clock } : {}), ...extra.services });
    ctx.app = await buildApp({ config: ctx.config, services: ctx.services, logger: false, ...extra.app });
    await ctx.app.ready();
  });
  afterAll(async () => {
    await ctx.app?.close();
    await ctx.store?.close();
    await ctx.database?.drop();
  });
  return ctx;
}

let tenantCounter = 0;

/** A new account with an API key: tenants are how tests prove isolation. */
export async function createTenant(ctx: TestContext, plan: 'free' | 'plus' = 'free'): Promise<Tenant> {
  const email = `tenant${++tenantCounter}-${Date.now()}@example.com`;
  const account = await ctx.services.accounts.create({ email, password: 'correct horse battery', plan });
  const { secret } = await ctx.services.apiKeys.create(cliPrincipal(account.id), 'test');
  return { accountId: account.id, email, apiKey: secret, auth: { authorization: `Bearer ${secret}` } };
}

/** app.inject with a JSON body and a parsed JSON response. */
export async function call(ctx: TestContext, options: InjectOptions & { json?: unknown }) {
  const { json, ...rest } = options;
  const res = await ctx.app.inject({
    ...rest,
    headers: { ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...rest.headers },
    payload: json !== undefined ? JSON.stringify(json) : rest.payload,
  });
  let body: any;
  try {
    body = res.body === '' ? undefined : JSON.parse(res.body);
  } catch {
    body = res.body;
  }
  return { status: res.statusCode, body, headers: res.headers, raw: res };
}

export async function createProduct(ctx: TestContext, tenant: Tenant, fields: Record<string, unknown> = {}) {
  const res = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: tenant.auth, json: { name: 'Test App', ...fields } });
  if (res.status !== 200) throw new Error(`createProduct: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string } & Record<string, unknown>;
}

export async function createLicense(ctx: TestContext, tenant: Tenant, productId: string, fields: Record<string, unknown> = {}) {
  const res = await call(ctx, {
    method: 'POST',
    url: '/api/v1/licenses',
    headers: tenant.auth,
    json: { productId, type: 'perpetual', maxDevices: 3, ...fields },
  });
  if (res.status !== 200) throw new Error(`createLicense: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { key: string } & Record<string, any>;
}

import { generateKeyPairSync } from 'node:crypto';
import { cliPrincipal } from '../../src/core/principal.ts';
import { createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { activateDevice } from '../support/mail.ts';
import { describeFormCases, type Fields, type FormCase } from '../support/dashboard-forms.ts';
import { forEachStore } from '../support/stores.ts';

const licenseState = (ctx: TestContext, key: string) => async () =>
  (await ctx.store.read.all(ctx.store.db.selectFrom('licenses').selectAll().where('key', '=', key))).concat(
    (await ctx.store.read.all(ctx.store.db.selectFrom('devices').selectAll().where('license_key', '=', key))) as never[],
  );
const productState = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('products').selectAll().where('account_id', '=', t.accountId));
const PRODUCT_FIELDS: Fields = { name: 'Good product', description: 'd', portalShow: 'on', portalDeviceResetLimit: '3', portalDeviceResetWindowDays: '30' };

async function licensed(ctx: TestContext, t: Tenant, fields: Record<string, unknown> = {}) {
  const product = await createProduct(ctx, t);
  const license = await createLicense(ctx, t, product.id, fields);
  return { product, license, page: `/dashboard/licenses/${license.key}` };
}

const CASES: FormCase[] = [
  {
    name: 'new product',
    prepare: async (ctx, t) => ({
      page: '/dashboard/products/new',
      action: '/dashboard/products/new',
      good: PRODUCT_FIELDS,
      bad: { fields: { ...PRODUCT_FIELDS, name: '  ', portalDeviceResetLimit: '0' }, message: 'Resets allowed per license must be at least 1.' },
      state: productState(ctx, t),
      owned: false,
    }),
  },
  {
    name: 'product settings',
    prepare: async (ctx, t) => {
      const p = await createProduct(ctx, t);
      return {
        page: `/dashboard/products/${p.id}`,
        action: `/dashboard/products/${p.id}`,
        good: { ...PRODUCT_FIELDS, name: 'Renamed', fallbackEnabled: 'on', actionButtonText: 'Download', actionButtonUrl: 'https://example.com/d/{key}' },
        bad: { fields: { ...PRODUCT_FIELDS, supportEmail: 'not-an-address' }, message: 'Support e-mail must be a valid e-mail address' },
        state: productState(ctx, t),
        owned: true,
      };
    },
  },
  {
    name: 'product delete',
    prepare: async (ctx, t) => {
      const p = await createProduct(ctx, t);
      return { page: `/dashboard/products/${p.id}`, action: `/dashboard/products/${p.id}/delete`, good: {}, state: productState(ctx, t), owned: true, destructive: true };
    },
  },
  {
    name: 'new license',
    prepare: async (ctx, t) => {
      const p = await createProduct(ctx, t);
      return {
        page: '/dashboard/licenses/new',
        action: '/dashboard/licenses/new',
        good: { productId: p.id, type: 'timed', expiresAt: '2031-01-31', maxDevices: '2', email: 'buyer@example.com' },
        bad: { fields: { productId: p.id, type: 'timed', expiresAt: '', maxDevices: '2' }, message: 'Expires on is required for a timed license.' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('licenses').selectAll().where('account_id', '=', t.accountId)),
        owned: false,
      };
    },
  },
  {
    name: 'license edit',
    prepare: async (ctx, t) => {
      const { license, page } = await licensed(ctx, t);
      return {
        page,
        action: page,
        good: { type: 'timed', expiresAt: '2031-05-01', maxDevices: '5', email: 'new@example.com' },
        bad: { fields: { type: 'perpetual', maxDevices: '0' }, message: 'Devices allowed must be at least 1.' },
        state: licenseState(ctx, license.key),
        owned: true,
      };
    },
  },
  {
    name: 'license revoke',
    prepare: async (ctx, t) => {
      const { license, page } = await licensed(ctx, t);
      return { page, action: `${page}/revoke`, good: {}, state: licenseState(ctx, license.key), owned: true, destructive: true };
    },
  },
  {
    name: 'license un-revoke',
    prepare: async (ctx, t) => {
      const { license, page } = await licensed(ctx, t);
      await ctx.services.licenses.update(cliPrincipal(t.accountId), license.key, { revoked: true });
      return { page, action: `${page}/unrevoke`, good: {}, state: licenseState(ctx, license.key), owned: true };
    },
  },
  {
    name: 'license delete',
    prepare: async (ctx, t) => {
      const { license, page } = await licensed(ctx, t);
      return { page, action: `${page}/delete`, good: {}, state: licenseState(ctx, license.key), owned: true, destructive: true };
    },
  },
  {
    name: 'device remove',
    prepare: async (ctx, t) => {
      const { product, license, page } = await licensed(ctx, t);
      await activateDevice(ctx, t.auth, license.key, product.id, 'dev-1');
      return { page, action: `${page}/devices/remove`, good: { device: 'dev-1' }, state: licenseState(ctx, license.key), owned: true, destructive: true };
    },
  },
  {
    name: 'devices reset',
    prepare: async (ctx, t) => {
      const { product, license, page } = await licensed(ctx, t);
      await activateDevice(ctx, t.auth, license.key, product.id, 'dev-1');
      await activateDevice(ctx, t.auth, license.key, product.id, 'dev-2');
      return { page, action: `${page}/devices/reset`, good: {}, state: licenseState(ctx, license.key), owned: true, destructive: true };
    },
  },
  {
    name: 'purchase e-mail',
    prepare: async (ctx, t) => {
      const { page } = await licensed(ctx, t, { email: `mail-${t.accountId}@example.com` });
      const state = () => ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('id').where('payload', 'like', `%mail-${t.accountId}@example.com%`));
      return { page, action: `${page}/send-email`, good: {}, state, owned: true };
    },
  },
  {
    name: 'token settings',
    prepare: async (ctx, t) => {
      const p = await createProduct(ctx, t);
      const page = `/dashboard/products/${p.id}/tokens`;
      return {
        page,
        action: page,
        good: { enabled: 'on', validitySeconds: '3600', exposePublicKey: 'on' },
        bad: { fields: { enabled: 'on', validitySeconds: '5' }, message: 'Token lifetime (seconds) must be at least 3600.' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('license_token_configs').selectAll().where('product_id', '=', p.id)),
        owned: true,
      };
    },
  },
  {
    name: 'token key pair',
    prepare: async (ctx, t) => {
      const p = await createProduct(ctx, t);
      const page = `/dashboard/products/${p.id}/tokens`;
      return {
        page,
        action: `${page}/key-pair`,
        good: { source: 'new' },
        bad: { fields: { source: 'import', privateKeyPem: 'not a key', confirm: 'yes' }, message: 'Private key to import (PKCS#8 PEM, P-256)' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('license_token_configs').selectAll().where('product_id', '=', p.id)),
        owned: true,
        destructive: true,
      };
    },
  },
  {
    name: 'token key pair copied from another product',
    prepare: async (ctx, t) => {
      const source = await createProduct(ctx, t);
      await ctx.services.licenseTokens.replaceKeyPair(cliPrincipal(t.accountId), source.id, {});
      const p = await createProduct(ctx, t);
      const page = `/dashboard/products/${p.id}/tokens`;
      return {
        page,
        action: `${page}/key-pair`,
        good: { source: `copy:${source.id}` },
        // A product of the account without a key pair cannot be copied.
        bad: { fields: { source: `copy:${(await createProduct(ctx, t)).id}`, confirm: 'yes' }, message: 'that product has no key pair yet' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('license_token_configs').select(['key_id', 'public_key_pem']).where('product_id', '=', p.id)),
        owned: true,
        destructive: true,
      };
    },
  },
  {
    name: 'token key pair imported',
    prepare: async (ctx, t) => {
      const p = await createProduct(ctx, t);
      const page = `/dashboard/products/${p.id}/tokens`;
      const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      return {
        page,
        action: `${page}/key-pair`,
        good: { source: 'import', privateKeyPem: pem },
        bad: { fields: { source: 'import', privateKeyPem: rsa, confirm: 'yes' }, message: 'Private key to import (PKCS#8 PEM, P-256)' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('license_token_configs').select(['key_id', 'public_key_pem']).where('product_id', '=', p.id)),
        owned: true,
        destructive: true,
      };
    },
  },
  {
    name: 'new API key',
    prepare: async (ctx, t) => ({
      page: '/dashboard/api-keys',
      action: '/dashboard/api-keys',
      good: { name: 'Web shop' },
      bad: { fields: { name: ' ' }, message: 'Name is required.' },
      state: () => ctx.store.read.all(ctx.store.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('account_id', '=', t.accountId)),
      owned: false,
    }),
  },
  {
    name: 'API key revoke',
    prepare: async (ctx, t) => {
      const keyId = (await ctx.services.apiKeys.list(cliPrincipal(t.accountId)))[0]!.id;
      return {
        page: '/dashboard/api-keys',
        action: `/dashboard/api-keys/${keyId}/revoke`,
        good: {},
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('account_id', '=', t.accountId)),
        owned: true,
        destructive: true,
      };
    },
  },
  {
    name: 'private portal link',
    prepare: async (ctx, t) => ({
      page: '/dashboard/portal',
      action: '/dashboard/portal',
      good: { email: 'customer@example.com' },
      bad: { fields: { email: 'nope' }, message: "s e-mail must be a valid e-mail address" },
      state: () => ctx.store.read.all(ctx.store.db.selectFrom('portal_tokens').select('token_hash').where('account_id', '=', t.accountId)),
      owned: false,
    }),
  },
];

forEachStore('dashboard forms', (kind) => {
  const ctx = useTestApp(kind);

  describeFormCases(ctx, CASES);
});

import { describe, expect, it } from 'vitest';
import { createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { activateDevice } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

type Fields = Record<string, string>;

/** One form of the dashboard: where it is, what it posts, what is stored, and which object it acts on. */
interface FormCase {
  name: string;
  /** Builds the objects the form needs in the tenant's account. */
  prepare(ctx: TestContext, t: Tenant): Promise<{
    page: string;
    action: string;
    good: Fields;
    bad?: { fields: Fields; message: string };
    /** A snapshot of what the form changes: equal before and after a refused post. */
    state(): Promise<unknown>;
    /** Whether the form acts on one object of the account (another account posting to it gets 404). */
    owned: boolean;
    /** Destructive: without confirm=yes the post only asks. */
    destructive?: boolean;
  }>;
}

const licenseState = (ctx: TestContext, key: string) => async () =>
  (await ctx.store.read.all(ctx.store.db.selectFrom('licenses').selectAll().where('key', '=', key))).concat(
    (await ctx.store.read.all(ctx.store.db.selectFrom('devices').selectAll().where('license_key', '=', key))) as never[],
  );
const productState = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('products').selectAll().where('user_id', '=', t.userId));
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
      bad: { fields: { ...PRODUCT_FIELDS, name: '  ', portalDeviceResetLimit: '0' }, message: 'Portal device reset limit must be at least 1.' },
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
        bad: { fields: { ...PRODUCT_FIELDS, supportEmail: 'not-an-address' }, message: 'Support email must be a valid e-mail address' },
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
        bad: { fields: { productId: p.id, type: 'timed', expiresAt: '', maxDevices: '2' }, message: 'Expires at is required for a timed license.' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('licenses').selectAll().where('user_id', '=', t.userId)),
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
        bad: { fields: { type: 'perpetual', maxDevices: '0' }, message: 'Max devices must be at least 1.' },
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
      await ctx.services.licenses.update({ accountId: t.userId, actor: { type: 'cli' } }, license.key, { revoked: true });
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
      const { page } = await licensed(ctx, t, { email: `mail-${t.userId}@example.com` });
      const state = () => ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('id').where('payload', 'like', `%mail-${t.userId}@example.com%`));
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
        bad: { fields: { enabled: 'on', validitySeconds: '5' }, message: 'Validity seconds must be at least 3600.' },
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
        bad: { fields: { source: 'import', privateKeyPem: 'not a key', confirm: 'yes' }, message: 'Private key pem' },
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('license_token_configs').selectAll().where('product_id', '=', p.id)),
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
      state: () => ctx.store.read.all(ctx.store.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('user_id', '=', t.userId)),
      owned: false,
    }),
  },
  {
    name: 'API key revoke',
    prepare: async (ctx, t) => {
      const keyId = (await ctx.services.apiKeys.list({ accountId: t.userId, actor: { type: 'cli' } }))[0]!.id;
      return {
        page: '/dashboard/api-keys',
        action: `/dashboard/api-keys/${keyId}/revoke`,
        good: {},
        state: () => ctx.store.read.all(ctx.store.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('user_id', '=', t.userId)),
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
      bad: { fields: { email: 'nope' }, message: 'Email must be a valid e-mail address' },
      state: () => ctx.store.read.all(ctx.store.db.selectFrom('portal_tokens').select('token_hash').where('user_id', '=', t.userId)),
      owned: false,
    }),
  },
];

forEachStore('dashboard forms', (kind) => {
  const ctx = useTestApp(kind);

  for (const c of CASES) {
    describe(c.name, () => {
      it('does its work, and a destructive one asks first', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        const browser = await signIn(ctx, t.email);
        await browser.request('GET', f.page);
        const csrf = browser.csrf;
        const before = await f.state();
        if (f.destructive) {
          const ask = await browser.request('POST', f.action, { ...f.good, csrf });
          expect(ask.status).toBe(200);
          expect(ask.body).toContain('name="confirm" value="yes"');
          expect(ask.body).toContain('>Cancel</a>');
          expect(await f.state()).toEqual(before);
        }
        const res = await browser.request('POST', f.action, { ...f.good, csrf, ...(f.destructive ? { confirm: 'yes' } : {}) });
        expect([200, 303], res.body).toContain(res.status);
        expect(await f.state()).not.toEqual(before);
        if (res.status === 303) {
          const next = await browser.request('GET', res.headers.location as string);
          expect(next.status).toBe(200);
          expect(next.body).toMatch(/class="notice ok" role="status"/);
        }
      });

      it('shows the form again with the message on bad input, storing nothing', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        if (!f.bad) return;
        const browser = await signIn(ctx, t.email);
        await browser.request('GET', f.page);
        const before = await f.state();
        const res = await browser.request('POST', f.action, { ...f.bad.fields, csrf: browser.csrf });
        expect(res.status).toBe(400);
        expect(textOf(res.body)).toContain(f.bad.message);
        expect(res.body).toContain('<form');
        expect(await f.state()).toEqual(before);
      });

      it('refuses a missing or wrong CSRF token with 403, storing nothing', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        const browser = await signIn(ctx, t.email);
        const before = await f.state();
        for (const csrf of [undefined, 'A'.repeat(43)]) {
          const res = await browser.request('POST', f.action, { ...f.good, confirm: 'yes', ...(csrf ? { csrf } : {}) });
          expect(res.status).toBe(403);
        }
        expect(await f.state()).toEqual(before);
      });

      it("answers 404 to another account, storing nothing", async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        if (!f.owned) return;
        const intruder = await signIn(ctx, (await createTenant(ctx)).email);
        await intruder.request('GET', '/dashboard');
        const csrf = intruder.csrf;
        const before = await f.state();
        expect((await intruder.request('GET', f.page)).status).toBe(f.page.startsWith('/dashboard/api-keys') ? 200 : 404);
        const res = await intruder.request('POST', f.action, { ...f.good, confirm: 'yes', csrf });
        expect(res.status).toBe(404);
        expect(await f.state()).toEqual(before);
      });
    });
  }
});

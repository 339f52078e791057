import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { timeOrderedId } from '../../src/core/ids.ts';
import { apiKeyPrincipal, cliPrincipal } from '../../src/core/principal.ts';
import { hashApiKey } from '../../src/modules/api-keys/service.ts';
import { licenseView } from '../../src/modules/licenses/schemas.ts';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import { hashToken as portalHash } from '../../src/modules/portal/service.ts';
import { productView } from '../../src/modules/products/schemas.ts';
import { createServices } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { queryPlan } from '../support/query-plan.ts';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

const NOW = Date.now();
const HOUR = 3_600_000;
const A = '0b0e7d3c-0000-4000-8000-00000000000a';
const B = '0b0e7d3c-0000-4000-8000-00000000000b';
const SECRET = `sk_${'A'.repeat(40)}`;
const KEY = 'K7QPM-2XHDA-9RTWC-B4NZE-6FJUV';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The tables that named the account `user_id` up to migration 014, with one row each of A's. */
const OLD_ROWS: Record<string, Record<string, unknown>> = {
  api_keys: { id: 'k_1', name: 'old key', key_hash: hashApiKey(SECRET), key_prefix: SECRET.slice(0, 7), created_at: NOW, last_used_at: null, revoked_at: null },
  products: { id: 'p_old', name: 'Old App', description: '', support_email: null, portal_show: 1, portal_allow_device_reset: 1, has_image: 0, fallback_enabled: 0, purchase_note: null, action_button_text: null, action_button_url: null, created_at: NOW },
  licenses: { key: KEY, product_id: 'p_old', type: 'perpetual', expires_at: null, revoked: 0, email: 'Buyer@example.com', email_normalized: 'buyer@example.com', max_devices: 2, created_at: NOW },
  portal_tokens: { token_hash: portalHash('old-link'), kind: 'link', email_normalized: 'buyer@example.com', expires_at: NOW + HOUR, created_at: NOW, link_hash: null },
  payment_connections: { id: 'pc_1', provider: 'stripe', livemode: 0, webhook_endpoint_id: 'we_1', api_key_sealed: 'sealed', webhook_secret_sealed: 'sealed', connected_at: NOW },
  price_mappings: { provider: 'stripe', price_id: 'price_1', product_id: 'p_old', max_devices: 1, license_type: 'perpetual', offset_days: null, fixed_expires_at: null, created_at: NOW },
  purchases: { id: 'pur_1', provider: 'stripe', session_id: 'cs_1', payment_id: 'pi_1', email: 'buyer@example.com', email_normalized: 'buyer@example.com', amount_total: 1900, currency: 'eur', status: 'fulfilled', invoice_id: null, created_at: NOW, updated_at: NOW },
  payment_reversals: { provider: 'stripe', payment_id: 'pi_2', reason: 'refunded', created_at: NOW },
  webhook_endpoints: { id: 'we_old', url: 'https://hooks.example.com/t', description: null, events: '["*"]', secret_sealed: 'sealed', enabled: 1, disabled_at: null, failing_since: null, created_at: NOW },
  webhook_deliveries: { id: 'wd_1', endpoint_id: 'we_old', event_id: 'ev_1', event_type: 'license.created', body: '{}', status: 'succeeded', attempts: 1, last_status_code: 200, next_attempt_at: null, delivered_at: NOW, created_at: NOW },
  audit_events: { id: timeOrderedId(NOW), license_key: KEY, type: 'license.created', actor: JSON.stringify({ type: 'dashboard_user', userId: A }), changes: null, created_at: NOW },
  dashboard_sessions: { id: 's_1', token_hash: sha256('old-session'), created_at: NOW, last_seen_at: NOW },
  dashboard_password_resets: { token_hash: sha256('old-reset'), expires_at: NOW + HOUR, created_at: NOW },
  dashboard_email_changes: { token_hash: sha256('old-change'), new_email: 'new@example.com', expires_at: NOW + HOUR, created_at: NOW },
  activity_daily: { product_id: 'p_old', day: Math.floor(NOW / (24 * HOUR)), activations: 3, validations: 7 },
};
const TABLES = Object.keys(OLD_ROWS);
/** The foreign keys to accounts.id (delete cascades); the others' rows outlive their account on purpose. */
const CASCADING = TABLES.filter((t) => !['webhook_deliveries', 'audit_events', 'activity_daily'].includes(t));

// Every table's `user_id` becomes `account_id` in place: rows, keys, indexes and sessions survive.
forEachStore('migration 015: one name for the tenant, account_id', (kind) => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    database = await createDatabaseAt(kind, '014_license_change_feed', async (db) => {
      await db.insertInto('accounts').values([A, B].map((id) => ({ id, email: `${id}@example.com`, password_hash: 'x', plan: 'plus', created_at: NOW }))).execute();
      for (const table of TABLES) await db.insertInto(table).values({ ...OLD_ROWS[table], user_id: A }).execute();
    });
    store = await database.open(); // runs migration 015
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('renames the column of every table and keeps every row', async () => {
    const tables = await store.db.introspection.getTables();
    const columns = (table: string) => tables.find((t) => t.name === table)!.columns.map((c) => c.name);
    expect(tables.filter((t) => columns(t.name).includes('user_id')).map((t) => t.name)).toEqual([]);
    for (const table of TABLES) {
      expect(columns(table), table).toContain('account_id');
      expect(await store.read.all(store.db.selectFrom(table as 'licenses').select('account_id')), table).toEqual([{ account_id: A }]);
    }
  });

  it('renames the indexes and foreign keys named after the user, and they still serve and bind', async () => {
    const names =
      kind === 'sqlite'
        ? (await store.read.all<{ name: string }>({ sql: `SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'`, parameters: [] })).map((r) => r.name)
        : [
            ...(await store.read.all<{ name: string }>({ sql: `SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()`, parameters: [] })).map((r) => r.name),
            ...(await store.read.all<{ name: string }>({ sql: `SELECT conname AS name FROM pg_constraint WHERE connamespace = current_schema()::regnamespace`, parameters: [] })).map((r) => r.name),
          ];
    expect(names.filter((n) => /user/.test(n))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['licenses_account_created_idx', 'licenses_account_email_idx', 'api_keys_account_idx', 'activity_daily_account_idx']));
    if (kind === 'postgres') expect(names).toEqual(expect.arrayContaining(CASCADING.map((t) => `${t}_account_id_fkey`)));

    const plan = await queryPlan(store, new SqlLicenseRepository(store).searching.searchQuery(A, {}, NOW, { limit: 51 }).compile());
    expect(plan).toMatch(kind === 'sqlite' ? /SEARCH licenses USING INDEX licenses_account_created_idx \(account_id=\?\)/ : /Index Scan Backward using licenses_account_created_idx/);

    // The foreign key still refuses an unknown account and still cascades.
    await expect(store.write((tx) => tx.run(store.db.insertInto('api_keys').values({ ...OLD_ROWS.api_keys, id: 'k_2', key_hash: 'h2', account_id: 'nobody' } as never)))).rejects.toThrow();
    await store.write((tx) => tx.run(store.db.insertInto('accounts').values({ id: 'gone', email: 'gone@example.com', password_hash: 'x', plan: 'free', created_at: NOW })));
    await store.write((tx) => tx.run(store.db.insertInto('api_keys').values({ ...OLD_ROWS.api_keys, id: 'k_3', key_hash: 'h3', account_id: 'gone' } as never)));
    await store.write((tx) => tx.run(store.db.deleteFrom('accounts').where('id', '=', 'gone')));
    expect(await store.read.all(store.db.selectFrom('api_keys').select('id').where('account_id', '=', 'gone'))).toEqual([]);
  });

  it('the old rows work: API key, products, licenses (userId on the wire), sessions, links, audit, activity, payments', async () => {
    const config = loadConfig({ ...database.env, SECRET_KEY: 'a'.repeat(64) });
    const services = createServices(store, config.secretKey, undefined, config);
    const principal = await services.apiKeys.authenticate(`Bearer ${SECRET}`);
    expect(principal).toEqual(apiKeyPrincipal(A, 'k_1', 'full'));
    const other = cliPrincipal(B);

    const [product] = await services.products.list(principal);
    expect(productView(product!)).toMatchObject({ id: 'p_old', userId: A });
    expect(await services.products.list(other)).toEqual([]);
    const license = await services.licenses.get(principal, KEY);
    expect(licenseView(license)).toMatchObject({ key: KEY, userId: A, productId: 'p_old' });
    await expect(services.licenses.get(other, KEY)).rejects.toMatchObject({ code: 'not_found' });

    expect((await services.dashboard.session('old-session'))?.session).toMatchObject({ id: 's_1', accountId: A });
    expect(await services.dashboard.resetLinkValid('old-reset')).toBe(true);
    expect(await services.dashboard.pendingEmailChange(A)).toMatchObject({ accountId: A, newEmail: 'new@example.com' });

    const opened = await services.portal.openLink('old-link');
    const session = await services.portal.session(opened!.sessionToken);
    expect(session).toMatchObject({ accountId: A });
    expect((await services.portal.licenses(session!)).map((l) => l.key)).toEqual([KEY]);

    // A stored actor keeps its wire shape: the audit log shows {type: 'dashboard_user', userId}.
    expect((await services.audit.list(principal, KEY, {})).data).toMatchObject([{ type: 'license.created', actor: { type: 'dashboard_user', userId: A } }]);
    expect(await services.activity.lastDays(principal)).toEqual(expect.arrayContaining([expect.objectContaining({ activations: 3, validations: 7 })]));
    expect(await services.activity.lastDays(other)).not.toEqual(expect.arrayContaining([expect.objectContaining({ activations: 3 })]));
    expect((await services.payments.listMappings(principal, 'p_old')).map((m) => m.priceId)).toEqual(['price_1']);
    expect((await services.payments.listPurchases(principal, {})).data.map((p) => p.id)).toEqual(['pur_1']);
    expect((await services.payments.listPurchases(other, {})).data).toEqual([]);
  });
});

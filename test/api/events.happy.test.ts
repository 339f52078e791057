import { beforeAll, expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { activateDevice } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

type Page = { data: { type: string; licenseKey: string; actor: { type: string }; changes: any; createdAt: string }[]; nextCursor: string | null };

forEachStore('account events (happy)', (kind) => {
  const ctx = useTestApp(kind);
  let tenant: Tenant;
  let productId: string;
  beforeAll(async () => {
    tenant = await createTenant(ctx);
    productId = (await createProduct(ctx, tenant)).id;
  });
  const events = async (query = '') => {
    const res = await call(ctx, { method: 'GET', url: `/api/v1/events${query}`, headers: tenant.auth });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Page;
  };

  it("lists every license's changes across the account newest first, held activations included", async () => {
    const a = await createLicense(ctx, tenant, productId);
    const b = await createLicense(ctx, tenant, productId);
    expect((await activateDevice(ctx, tenant.auth, a.key, productId, 'laptop')).status).toBe(200);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...tenant.auth, 'license-key': b.key }, json: { revoked: true } });
    const { data, nextCursor } = await events();
    expect(nextCursor).toBeNull();
    expect(data.map((e) => [e.type, e.licenseKey])).toEqual([
      ['license.revoked', b.key],
      ['device.activated', a.key],
      ['license.created', b.key],
      ['license.created', a.key],
    ]);
    expect(data[1]!.actor.type).toBe('api_key');
    expect(data[1]!.changes.device).toMatchObject({ identifier: 'laptop' });
    expect(data[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('filters by type and by license key (as typed: lower case and spaces), together too', async () => {
    const all = await events();
    const [revoked] = all.data;
    expect((await events('?type=license.revoked')).data).toEqual([revoked]);
    expect((await events('?type=device.activated')).data.map((e) => e.type)).toEqual(['device.activated']);
    const key = all.data.find((e) => e.type === 'device.activated')!.licenseKey;
    const forKey = await events(`?licenseKey=${encodeURIComponent(` ${key.toLowerCase()} `)}`);
    expect(forKey.data.map((e) => e.type)).toEqual(['device.activated', 'license.created']);
    expect((await events(`?licenseKey=${key}&type=license.created`)).data).toHaveLength(1);
    expect((await events('?licenseKey=AAAAA-BBBBB-CCCCC-DDDDD-EEEEE')).data).toEqual([]);
  });

  it('pages with limit and cursor, each entry once', async () => {
    for (let i = 0; i < 3; i++) await createLicense(ctx, tenant, productId);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = await events(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((e) => `${e.type} ${e.licenseKey} ${e.createdAt}`));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    const whole = (await events('?limit=100')).data.map((e) => `${e.type} ${e.licenseKey} ${e.createdAt}`);
    expect(seen).toEqual(whole);
    expect(pages).toBe(Math.ceil(whole.length / 2));
  });
});

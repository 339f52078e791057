import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

forEachStore('licenses API', (kind) => {
  const ctx = useTestApp(kind);

  it('creates a perpetual license with a generated key and empty devices', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json: { productId: p.id, type: 'perpetual', maxDevices: 2 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      key: expect.stringMatching(/^[A-HJ-NP-Z2-9]{5}(-[A-HJ-NP-Z2-9]{5}){4}$/),
      userId: t.accountId,
      productId: p.id,
      type: 'perpetual',
      expiresAt: null,
      revoked: false,
      email: null,
      maxDevices: 2,
      activeDevices: [],
      createdAt: expect.stringMatching(ISO_MS),
      entitlements: [],
      metadata: {},
      trial: false,
      subscription: null,
    });
    // The field SDKs' fields first, in their order; wave 3's are added after them.
    expect(Object.keys(res.body)).toEqual(['key', 'userId', 'productId', 'type', 'expiresAt', 'revoked', 'email', 'maxDevices', 'activeDevices', 'createdAt', 'entitlements', 'metadata', 'trial', 'subscription']);
  });

  it('creates a timed license from a date or a date-time with an offset', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const a = await createLicense(ctx, t, p.id, { type: 'timed', expiresAt: '2030-01-31', email: 'Buyer@Example.com' });
    expect(a).toMatchObject({ type: 'timed', expiresAt: '2030-01-31T00:00:00.000Z', email: 'Buyer@Example.com' });
    const b = await createLicense(ctx, t, p.id, { type: 'timed', expiresAt: '2030-01-31T12:00:00+01:00' });
    expect(b.expiresAt).toBe('2030-01-31T11:00:00.000Z');
  });

  it('gets a license by its key, trimmed and case-insensitive', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const res = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': ` ${l.key.toLowerCase()} `, 'content-type': 'application/json' } });
    expect(res).toMatchObject({ status: 200, body: l });
  });

  it('updates fields, revokes and un-revokes', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const headers = { ...t.auth, 'license-key': l.key };
    const timed = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { type: 'timed', expiresAt: '2031-05-01', maxDevices: 10, email: 'new@example.com' } });
    expect(timed.body).toMatchObject({ type: 'timed', expiresAt: '2031-05-01T00:00:00.000Z', maxDevices: 10, email: 'new@example.com' });
    const revoked = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: true } });
    expect(revoked.body).toMatchObject({ revoked: true, type: 'timed', maxDevices: 10 });
    const restored = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { revoked: false, email: null } });
    expect(restored.body).toMatchObject({ revoked: false, email: null });
  });

  it('switching to perpetual clears expiresAt; timed keeps its date when only other fields change', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { type: 'timed', expiresAt: '2030-01-01' });
    const headers = { ...t.auth, 'license-key': l.key };
    const same = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { maxDevices: 7 } });
    expect(same.body).toMatchObject({ type: 'timed', expiresAt: '2030-01-01T00:00:00.000Z' });
    const perpetual = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { type: 'perpetual' } });
    expect(perpetual.body).toMatchObject({ type: 'perpetual', expiresAt: null });
  });

  it('allows an expiry in the past, which yields an expired license', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { type: 'timed', expiresAt: '2020-01-01' });
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers: { ...t.auth, 'license-key': l.key }, json: {} });
    expect(res.body).toMatchObject({ isValid: false, status: 'expired' });
  });

  it('deletes a license and its devices with an empty 200', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const headers = { ...t.auth, 'license-key': l.key };
    await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json: { productId: p.id, device: { identifier: 'd', name: 'n' } } });
    const res = await call(ctx, { method: 'DELETE', url: '/api/v1/licenses', headers: { ...headers, 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.raw.body).toBe('');
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers })).status).toBe(404);
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('devices').selectAll().where('license_key', '=', l.key))).toEqual([]);
  });

  it('lists a product licenses in pages, filtered by e-mail case-insensitively', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const other = await createProduct(ctx, t);
    await createLicense(ctx, t, other.id);
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createLicense(ctx, t, p.id, { email: i % 2 === 0 ? 'Even@Example.com' : 'odd@example.com' }));
    const keys: string[] = [];
    let cursor: string | null = null;
    const pageSizes: number[] = [];
    do {
      const res: any = await call(ctx, {
        method: 'GET',
        url: `/api/v1/products/${p.id}/licenses?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        headers: t.auth,
      });
      expect(res.status).toBe(200);
      pageSizes.push(res.body.data.length);
      keys.push(...res.body.data.map((l: { key: string }) => l.key));
      cursor = res.body.nextCursor;
    } while (cursor && pageSizes.length < 10);
    expect(pageSizes).toEqual([2, 2, 1]);
    expect(keys.sort()).toEqual(created.map((l) => l.key).sort());

    const even = await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}/licenses?email=even@EXAMPLE.com`, headers: t.auth });
    expect(even.body.data).toHaveLength(3);
    expect(even.body.nextCursor).toBeNull();
    expect(even.body.data[0]).toHaveProperty('activeDevices');
  });
});

import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, getPublicKey, publicActivate, refreshToken, verifyWithJwk } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('entitlements and metadata', (kind) => {
  const ctx = useTestApp(kind);

  it('a license starts with its product default entitlements; its own set replaces them', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { defaultEntitlements: ['pro', 'export.pdf', 'pro'] });
    expect(p.defaultEntitlements).toEqual(['pro', 'export.pdf']);
    expect((await createLicense(ctx, t, p.id)).entitlements).toEqual(['pro', 'export.pdf']);
    const own = await createLicense(ctx, t, p.id, { entitlements: ['basic'] });
    expect(own.entitlements).toEqual(['basic']);
    const none = await createLicense(ctx, t, p.id, { entitlements: [] });
    expect(none.entitlements).toEqual([]);
    // Changing the product's defaults later leaves existing licenses as they are.
    const patched = await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { defaultEntitlements: ['team'] } });
    expect(patched.body.defaultEntitlements).toEqual(['team']);
    const again = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': own.key } });
    expect(again.body.entitlements).toEqual(['basic']);
  });

  it('PATCH replaces the set and records the change in the audit log', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const headers = { ...t.auth, 'license-key': l.key };
    const res = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { entitlements: ['pro', 'sso'] } });
    expect(res.body.entitlements).toEqual(['pro', 'sso']);
    const audit = await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers });
    expect(JSON.stringify(audit.body)).toContain('"entitlements":{"from":[],"to":["pro","sso"]}');
    // The same set again changes nothing: no second entry.
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { entitlements: ['pro', 'sso'] } });
    const after = await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers });
    expect(after.body.data.length).toBe(audit.body.data.length);
  });

  it('public validation, activation and the token carry the entitlements', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { defaultEntitlements: ['pro'] });
    await configureTokens(ctx, t, p.id);
    const l = await createLicense(ctx, t, p.id);
    const activated = await publicActivate(ctx, l.key, p.id);
    expect(activated.body.license.entitlements).toEqual(['pro']);
    const validated = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, deviceIdentifier: 'dev-1', productId: p.id } });
    expect(validated.body.license.entitlements).toEqual(['pro']);
    const jwk = (await getPublicKey(ctx, p.id)).body.jwk;
    expect((await verifyWithJwk(activated.body.token, jwk)).payload.license).toMatchObject({ entitlements: ['pro'] });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key }, json: { entitlements: ['pro', 'sso'] } });
    const refreshed = await refreshToken(ctx, l.key, p.id);
    expect((await verifyWithJwk(refreshed.body.token, jwk)).payload.license).toMatchObject({ entitlements: ['pro', 'sso'] });
  });

  it('metadata: set on create, merged on PATCH, a null value removes its key', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { metadata: { crm: 'A-17', seat: 'blue' } });
    expect(l.metadata).toEqual({ crm: 'A-17', seat: 'blue' });
    const headers = { ...t.auth, 'license-key': l.key };
    const res = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers, json: { metadata: { seat: null, region: 'eu', __proto__x: 'plain' } } });
    expect(res.body.metadata).toEqual({ crm: 'A-17', region: 'eu', __proto__x: 'plain' });
    const listed = await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}/licenses`, headers: t.auth });
    expect(listed.body.data[0].metadata).toEqual({ crm: 'A-17', region: 'eu', __proto__x: 'plain' });
  });

  it('metadata at the limits is accepted: 50 keys of 40 characters, values of 500', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [String(i).padStart(40, 'k'), 'v'.repeat(500)]));
    const l = await createLicense(ctx, t, p.id, { metadata });
    expect(Object.keys(l.metadata)).toHaveLength(50);
  });
});

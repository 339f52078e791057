import { decodeJwt } from 'jose';
import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, publicActivate, refreshToken } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('metadata stays on the server', (kind) => {
  const ctx = useTestApp(kind);

  it('no public answer and no token carries metadata', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    await configureTokens(ctx, t, p.id);
    const l = await createLicense(ctx, t, p.id, { metadata: { secretNote: 'vip-discount-40' } });
    const answers = [
      await publicActivate(ctx, l.key, p.id),
      await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, deviceIdentifier: 'dev-1', productId: p.id } }),
      await refreshToken(ctx, l.key, p.id),
    ];
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.raw.body).not.toContain('vip-discount-40');
      expect(res.raw.body).not.toContain('metadata');
      if (res.body.token) expect(JSON.stringify(decodeJwt(res.body.token))).not.toContain('vip-discount-40');
    }
  });

  it("another account can neither read nor write a license's entitlements or metadata", async () => {
    const owner = await createTenant(ctx);
    const other = await createTenant(ctx);
    const p = await createProduct(ctx, owner);
    const l = await createLicense(ctx, owner, p.id, { metadata: { a: 'b' }, entitlements: ['pro'] });
    const res = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...other.auth, 'license-key': l.key }, json: { metadata: { a: 'stolen' }, entitlements: [] } });
    expect(res).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    const after = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...owner.auth, 'license-key': l.key } });
    expect(after.body).toMatchObject({ metadata: { a: 'b' }, entitlements: ['pro'] });
  });
});

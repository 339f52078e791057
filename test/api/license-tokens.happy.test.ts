import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair as joseKeyPair, exportPKCS8 } from 'jose';
import { expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import {
  configureTokens,
  getPublicKey,
  getTokenConfig,
  manualClock,
  publicActivate,
  refreshToken,
  replaceKeyPair,
  servicesWithTokenOptions,
  verifyWithJwk,
} from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('license tokens', (kind) => {
  const ctx = useTestApp(kind);

  async function setup(productFields = {}, licenseFields = {}) {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, productFields);
    const l = await createLicense(ctx, t, p.id, licenseFields);
    return { t, p, l };
  }

  it('a product starts with tokens off and default settings, and no key', async () => {
    const { t, p } = await setup();
    const res = await getTokenConfig(ctx, t, p.id);
    expect(res).toMatchObject({ status: 200 });
    expect(res.body).toEqual({ enabled: false, validitySeconds: 604800, exposePublicKey: true, keyId: null, publicKeyJwk: null, publicKeyPem: null });
  });

  it('enabling the first time generates a P-256 pair with a thumbprint kid; later changes keep it', async () => {
    const { t, p } = await setup();
    const on = await configureTokens(ctx, t, p.id, { enabled: true });
    expect(on).toMatchObject({ enabled: true, validitySeconds: 604800, exposePublicKey: true });
    expect(on.publicKeyJwk).toEqual({ kty: 'EC', crv: 'P-256', alg: 'ES256', x: expect.any(String), y: expect.any(String), kid: on.keyId });
    expect(on.keyId).toBe(await calculateJwkThumbprint(on.publicKeyJwk));
    expect(on.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(JSON.stringify(on)).not.toMatch(/PRIVATE|"d"/);

    const changed = await configureTokens(ctx, t, p.id, { validitySeconds: 3600, exposePublicKey: false });
    expect(changed).toMatchObject({ enabled: true, validitySeconds: 3600, exposePublicKey: false, keyId: on.keyId });
    const again = await configureTokens(ctx, t, p.id, { enabled: false });
    await configureTokens(ctx, t, p.id, { enabled: true });
    expect(again.keyId).toBe(on.keyId);
    expect((await getTokenConfig(ctx, t, p.id)).body).toMatchObject({ enabled: true, validitySeconds: 3600, keyId: on.keyId });
  });

  it('publishes the public key as a JWK', async () => {
    const { t, p } = await setup();
    const config = await configureTokens(ctx, t, p.id);
    expect(await getPublicKey(ctx, p.id)).toMatchObject({ status: 200, body: { jwk: config.publicKeyJwk } });
  });

  it('public activation returns a token with exactly the agreed claims, verifiable with the published JWK', async () => {
    const expiresAt = '2031-05-06T07:08:09.000Z';
    const { t, p, l } = await setup({}, { type: 'timed', expiresAt, email: 'buyer@example.com', maxDevices: 2 });
    const config = await configureTokens(ctx, t, p.id, { enabled: true, validitySeconds: 7200 });
    const res = await publicActivate(ctx, l.key, p.id, 'mac-1', 'Laptop');
    expect(res.status).toBe(200);
    const token = res.body.token as string;
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', typ: 'JWT', kid: config.keyId });
    const { payload } = await verifyWithJwk(token, (await getPublicKey(ctx, p.id)).body.jwk);
    const activated = Math.floor(Date.parse(res.body.device.activationDate) / 1000);
    expect(payload).toEqual({
      status: 'active',
      license: {
        key: l.key,
        productId: p.id,
        type: 'timed',
        expiresAt: Date.parse(expiresAt) / 1000,
        createdAt: Math.floor(Date.parse(l.createdAt) / 1000),
        maxDevices: 2,
        email: 'buyer@example.com',
        entitlements: [],
      },
      device: { identifier: 'mac-1', name: 'Laptop', activationDate: activated },
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(payload.exp! - payload.iat!).toBe(7200);
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(5);
  });

  it('public activation omits the token property when the product has tokens off', async () => {
    const { p, l } = await setup();
    const res = await publicActivate(ctx, l.key, p.id);
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('token');
  });

  it('refresh gives a fresh token for an active device, with a product id or an array of them', async () => {
    const { t, p, l } = await setup();
    const config = await configureTokens(ctx, t, p.id);
    await publicActivate(ctx, l.key, p.id, 'dev-1', 'Laptop');
    const res = await refreshToken(ctx, l.key.toLowerCase(), ['p_other', p.id], 'dev-1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ isValid: true, status: 'active', token: expect.any(String) });
    const { payload } = await verifyWithJwk(res.body.token, config.publicKeyJwk);
    expect(payload).toMatchObject({ status: 'active', license: { key: l.key, productId: p.id, type: 'perpetual', expiresAt: null }, device: { identifier: 'dev-1' } });
    expect(payload.exp! - payload.iat!).toBe(604800);
  });

  it('an expired license on a product with fallback gets a token with status fallbacked', async () => {
    const { t, p, l } = await setup({ fallbackEnabled: true }, { type: 'timed', expiresAt: '2031-01-01' });
    const config = await configureTokens(ctx, t, p.id);
    await publicActivate(ctx, l.key, p.id);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key }, json: { expiresAt: '2020-01-01' } });
    const res = await refreshToken(ctx, l.key, p.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('fallbacked');
    const { payload } = await verifyWithJwk(res.body.token, config.publicKeyJwk);
    expect(payload).toMatchObject({ status: 'fallbacked', license: { expiresAt: Date.parse('2020-01-01') / 1000 } });
  });

  it('a new key pair takes effect at once: new kid, and old tokens no longer verify with the new key', async () => {
    const { t, p, l } = await setup();
    const before = await configureTokens(ctx, t, p.id);
    const oldToken = (await publicActivate(ctx, l.key, p.id)).body.token as string;
    const rotated = await replaceKeyPair(ctx, t, p.id, {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.keyId).not.toBe(before.keyId);
    const newToken = (await refreshToken(ctx, l.key, p.id)).body.token as string;
    expect(decodeProtectedHeader(newToken).kid).toBe(rotated.body.keyId);
    await verifyWithJwk(newToken, rotated.body.publicKeyJwk);
    await expect(verifyWithJwk(oldToken, rotated.body.publicKeyJwk)).rejects.toThrow(/signature/);
    await verifyWithJwk(oldToken, before.publicKeyJwk); // still genuine for a client holding the old key
  });

  it("copies another product's key pair within the account: same kid, tokens verify with either JWK", async () => {
    const { t, p: source } = await setup();
    const target = await createProduct(ctx, t, { name: 'Pro tier' });
    const l = await createLicense(ctx, t, target.id);
    const sourceConfig = await configureTokens(ctx, t, source.id);
    const copied = await replaceKeyPair(ctx, t, target.id, { copyFromProductId: source.id });
    expect(copied.status).toBe(200);
    expect(copied.body).toMatchObject({ enabled: false, keyId: sourceConfig.keyId, publicKeyPem: sourceConfig.publicKeyPem });
    await configureTokens(ctx, t, target.id, { enabled: true });
    const token = (await publicActivate(ctx, l.key, target.id)).body.token as string;
    await verifyWithJwk(token, sourceConfig.publicKeyJwk);
  });

  it('imports a PKCS#8 P-256 private key; tokens verify with the matching public key', async () => {
    const { t, p, l } = await setup();
    const own = await joseKeyPair('ES256', { extractable: true });
    const pem = await exportPKCS8(own.privateKey);
    const imported = await replaceKeyPair(ctx, t, p.id, { privateKeyPem: pem });
    expect(imported.status).toBe(200);
    const ownJwk = await exportJWK(own.publicKey);
    expect(imported.body.keyId).toBe(await calculateJwkThumbprint(ownJwk));
    await configureTokens(ctx, t, p.id, { enabled: true });
    const token = (await publicActivate(ctx, l.key, p.id)).body.token as string;
    await verifyWithJwk(token, ownJwk);
  });

  it('turning tokens off stops issuing them and hides the public key; exposePublicKey false hides only the key', async () => {
    const { t, p, l } = await setup();
    await configureTokens(ctx, t, p.id);
    await configureTokens(ctx, t, p.id, { exposePublicKey: false });
    expect(await getPublicKey(ctx, p.id)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect((await publicActivate(ctx, l.key, p.id)).body.token).toEqual(expect.any(String));

    await configureTokens(ctx, t, p.id, { enabled: false, exposePublicKey: true });
    expect(await getPublicKey(ctx, p.id)).toMatchObject({ status: 404 });
    const activation = await publicActivate(ctx, l.key, p.id);
    expect(activation.status).toBe(200);
    expect(activation.body).not.toHaveProperty('token');
    expect(await refreshToken(ctx, l.key, p.id)).toMatchObject({ status: 400, body: { error: { code: 'license_tokens_disabled' } } });
  });

  it("deleting a product deletes its token settings and key", async () => {
    const { t, p } = await setup();
    await configureTokens(ctx, t, p.id);
    expect((await call(ctx, { method: 'DELETE', url: `/api/v1/products/${p.id}?force=true`, headers: t.auth })).status).toBe(200);
    const rows = await ctx.store.read.all(ctx.store.db.selectFrom('license_token_configs').select('product_id').where('product_id', '=', p.id));
    expect(rows).toEqual([]);
    expect(await getPublicKey(ctx, p.id)).toMatchObject({ status: 404 });
  });

  it('stores the private key only sealed, bound to its product', async () => {
    const { t, p } = await setup();
    await configureTokens(ctx, t, p.id);
    const row = await ctx.store.read.first(ctx.store.db.selectFrom('license_token_configs').selectAll().where('product_id', '=', p.id));
    expect(row?.private_key_sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    const everything = JSON.stringify(row);
    expect(everything).not.toMatch(/PRIVATE KEY/);
  });

  it('another server process on the same database follows a rotation or a disable within its revalidation interval', async () => {
    const { t, p, l } = await setup();
    await configureTokens(ctx, t, p.id);
    await publicActivate(ctx, l.key, p.id);
    const store = await ctx.database.open();
    // The other process keeps the default interval (1 s); its clock moves only when the test says.
    const REVALIDATE_MS = 1000;
    const clock = manualClock();
    const other = await buildApp({ config: ctx.config, services: servicesWithTokenOptions(store, ctx.config.secretKey, { clock: clock.now }), logger: false });
    try {
      const viaOther = () => other.inject({ method: 'POST', url: '/api/v1/public/licenses/token', payload: { licenseKey: l.key, deviceIdentifier: 'dev-1', productId: p.id } });
      const kidViaOther = async () => decodeProtectedHeader((await viaOther()).json().token).kid;
      const first = await kidViaOther(); // caches the signer
      const rotated = (await replaceKeyPair(ctx, t, p.id)).body;
      expect(first).not.toBe(rotated.keyId);
      // Within the interval the other process still trusts its cached key (what the bound is about)...
      clock.advance(REVALIDATE_MS - 1);
      expect(await kidViaOther()).toBe(first);
      // ...and at the end of it, it asks the store and follows the rotation.
      clock.advance(1);
      expect(await kidViaOther()).toBe(rotated.keyId);

      await configureTokens(ctx, t, p.id, { enabled: false });
      clock.advance(REVALIDATE_MS);
      expect((await viaOther()).json()).toMatchObject({ error: { code: 'license_tokens_disabled' } });
    } finally {
      await other.close();
      await store.close();
    }
  });
});

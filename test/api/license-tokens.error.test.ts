import { exportPKCS8, generateKeyPair as joseKeyPair } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import { expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { createServices } from '../../src/services.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, getPublicKey, getTokenConfig, publicActivate, refreshToken, replaceKeyPair } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

const pkcs8 = (type: 'rsa' | 'ec' | 'ed25519', options: object) =>
  generateKeyPairSync(type as 'ec', options as { namedCurve: string }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

forEachStore('license tokens: bad input', (kind) => {
  const ctx = useTestApp(kind);

  async function setup(licenseFields = {}) {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, licenseFields);
    return { t, p, l };
  }

  it.each([
    [{ validitySeconds: 3599 }, 'validitySeconds'],
    [{ validitySeconds: 31_536_001 }, 'validitySeconds'],
    [{ validitySeconds: '3600' }, 'validitySeconds'],
    [{ validitySeconds: 3600.5 }, 'validitySeconds'],
    [{ enabled: 'yes' }, 'enabled'],
    [{ exposePublicKey: null }, 'exposePublicKey'],
  ])('PUT %j is a 400 invalid_request and changes nothing', async (json, path) => {
    const { t, p } = await setup();
    const res = await call(ctx, { method: 'PUT', url: `/api/v1/products/${p.id}/license-token`, headers: t.auth, json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(res.body.error.issues)).toContain(path);
    expect((await getTokenConfig(ctx, t, p.id)).body).toMatchObject({ enabled: false, validitySeconds: 604800, keyId: null });
  });

  const badKeys: [string, () => Promise<string> | string, RegExp][] = [
    ['not PEM at all', () => 'hello', /PKCS#8/],
    ['a PEM whose body is garbage', () => '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', /not a readable private key/],
    ['an RSA key', () => pkcs8('rsa', { modulusLength: 2048 }), /P-256.*got rsa/],
    ['a P-384 key', () => pkcs8('ec', { namedCurve: 'P-384' }), /P-256.*got EC secp384r1/],
    ['an Ed25519 key', () => pkcs8('ed25519', {}), /P-256.*got ed25519/],
    [
      'a SEC1 EC key (not PKCS#8)',
      () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'sec1' }) as string,
      /PKCS#8/,
    ],
    [
      'an encrypted PKCS#8 key',
      () =>
        generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'x' }) as string,
      /PKCS#8/,
    ],
    ['a public key', () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }) as string, /PKCS#8/],
  ];

  it.each(badKeys)('importing %s is a clear 400 and keeps the current key', async (_name, make, message) => {
    const { t, p } = await setup();
    const before = await configureTokens(ctx, t, p.id);
    const res = await replaceKeyPair(ctx, t, p.id, { privateKeyPem: await make() });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'privateKeyPem', message: expect.stringMatching(message) }] });
    expect((await getTokenConfig(ctx, t, p.id)).body.keyId).toBe(before.keyId);
  });

  it('key-pair bodies that are not one of the three shapes are a 400', async () => {
    const { t, p } = await setup();
    const other = await createProduct(ctx, t, { name: 'Other' });
    await configureTokens(ctx, t, other.id);
    const pem = await exportPKCS8((await joseKeyPair('ES256', { extractable: true })).privateKey);
    const bodies = [{ copyFromProductId: other.id, privateKeyPem: pem }, { copyFromProductId: '' }, { privateKeyPem: 'x'.repeat(8193) }, { privateKeyPEM: pem }, []];
    for (const json of bodies) {
      const res = await replaceKeyPair(ctx, t, p.id, json as Record<string, unknown>);
      expect(res.status, JSON.stringify(json).slice(0, 80)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await getTokenConfig(ctx, t, p.id)).body.keyId).toBeNull();
  });

  it('copying from a product that has no key pair is a 400', async () => {
    const { t, p } = await setup();
    const empty = await createProduct(ctx, t, { name: 'No key' });
    const res = await replaceKeyPair(ctx, t, p.id, { copyFromProductId: empty.id });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', issues: [{ path: 'copyFromProductId' }] } } });
  });

  it('unknown products are a 404 on every token route', async () => {
    const { t } = await setup();
    const url = '/api/v1/products/p_doesnotexist/license-token';
    expect(await call(ctx, { method: 'GET', url, headers: t.auth })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(await call(ctx, { method: 'PUT', url, headers: t.auth, json: { enabled: true } })).toMatchObject({ status: 404 });
    expect(await call(ctx, { method: 'POST', url: `${url}/key-pair`, headers: t.auth, json: {} })).toMatchObject({ status: 404 });
    expect(await getPublicKey(ctx, 'p_doesnotexist')).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    const { t: t2, p: p2 } = await setup();
    expect(await replaceKeyPair(ctx, t2, p2.id, { copyFromProductId: 'p_doesnotexist' })).toMatchObject({ status: 404 });
  });

  it('a product with tokens never enabled has no public key', async () => {
    const { p } = await setup();
    expect(await getPublicKey(ctx, p.id)).toMatchObject({ status: 404 });
  });

  it('token refresh fails with the agreed codes', async () => {
    const { t, p, l } = await setup();
    await configureTokens(ctx, t, p.id);
    await publicActivate(ctx, l.key, p.id, 'dev-1');
    const code = async (res: Promise<{ status: number; body: any }>) => {
      const r = await res;
      expect(r.status).toBe(400);
      return r.body.error.code as string;
    };
    expect(await code(refreshToken(ctx, 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', p.id))).toBe('invalid_license');
    expect(await code(refreshToken(ctx, l.key, 'p_other'))).toBe('invalid_license');
    expect(await code(refreshToken(ctx, l.key, p.id, 'never-activated'))).toBe('invalid_license');

    const expired = await createLicense(ctx, t, p.id, { type: 'timed', expiresAt: '2031-01-01' });
    await publicActivate(ctx, expired.key, p.id, 'dev-1');
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': expired.key }, json: { expiresAt: '2020-01-01' } });
    expect(await code(refreshToken(ctx, expired.key, p.id))).toBe('license_expired');

    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key }, json: { revoked: true } });
    const revoked = await refreshToken(ctx, l.key, p.id);
    expect(revoked).toMatchObject({ status: 400, body: { error: { code: 'license_revoked', message: 'License is revoked.' } } });
  });

  it('a server with another SECRET_KEY cannot open the key: a 500 without internals, and no token', async () => {
    const { t, p, l } = await setup();
    await configureTokens(ctx, t, p.id);
    await publicActivate(ctx, l.key, p.id);
    const store = await ctx.database.open();
    const other = await buildApp({ config: ctx.config, services: createServices(store, Buffer.alloc(32, 9)), logger: false });
    try {
      const res = await other.inject({ method: 'POST', url: '/api/v1/public/licenses/token', payload: { licenseKey: l.key, deviceIdentifier: 'dev-1', productId: p.id } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: { code: 'internal_error', message: expect.any(String) } });
      expect(res.body).not.toMatch(/secret|decipher|auth|at /i);
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('token refresh on a product without tokens is license_tokens_disabled', async () => {
    const { p, l } = await setup();
    await publicActivate(ctx, l.key, p.id);
    expect(await refreshToken(ctx, l.key, p.id)).toMatchObject({ status: 400, body: { error: { code: 'license_tokens_disabled' } } });
  });

  it.each([
    [{}, 'licenseKey'],
    [{ licenseKey: 'K', productId: 'p_x' }, 'deviceIdentifier'],
    [{ licenseKey: 'K', deviceIdentifier: 'd'.repeat(97), productId: 'p_x' }, 'deviceIdentifier'],
    [{ licenseKey: 'K', deviceIdentifier: 'd', productId: [] }, 'productId'],
    [{ licenseKey: 'K', deviceIdentifier: 'd', productId: 5 }, 'productId'],
    [{ licenseKey: 'K', deviceIdentifier: '   ', productId: 'p_x' }, 'deviceIdentifier'],
  ])('token refresh with %j is a 400 invalid_request', async (json, path) => {
    const res = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/token', json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(res.body.error.issues)).toContain(path);
  });
});

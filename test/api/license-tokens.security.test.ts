import { exportPKCS8, generateKeyPair as joseKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/core/secret-box.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, getTokenConfig, publicActivate, refreshToken, replaceKeyPair, verifyWithJwk } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('license tokens: isolation and tampering', (kind) => {
  const ctx = useTestApp(kind);

  it("another account's product is a 404 on every token route, and stays unchanged", async () => {
    const owner = await createTenant(ctx);
    const intruder = await createTenant(ctx);
    const p = await createProduct(ctx, owner);
    const before = await configureTokens(ctx, owner, p.id);
    const url = `/api/v1/products/${p.id}/license-token`;
    expect(await call(ctx, { method: 'GET', url, headers: intruder.auth })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(await call(ctx, { method: 'PUT', url, headers: intruder.auth, json: { enabled: false } })).toMatchObject({ status: 404 });
    const pem = await exportPKCS8((await joseKeyPair('ES256', { extractable: true })).privateKey);
    expect(await replaceKeyPair(ctx, intruder, p.id, { privateKeyPem: pem })).toMatchObject({ status: 404 });
    expect(await replaceKeyPair(ctx, intruder, p.id, {})).toMatchObject({ status: 404 });
    expect((await getTokenConfig(ctx, owner, p.id)).body).toEqual(before);
  });

  it("copying the key pair of another account's product is a 404, and the target keeps its key", async () => {
    const victim = await createTenant(ctx);
    const thief = await createTenant(ctx);
    const victimProduct = await createProduct(ctx, victim);
    await configureTokens(ctx, victim, victimProduct.id);
    const own = await createProduct(ctx, thief);
    const before = await configureTokens(ctx, thief, own.id);
    const res = await replaceKeyPair(ctx, thief, own.id, { copyFromProductId: victimProduct.id });
    expect(res).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: 'Product not found.' } } });
    expect((await getTokenConfig(ctx, thief, own.id)).body.keyId).toBe(before.keyId);
  });

  it('the token routes of the server API need an API key', async () => {
    const url = '/api/v1/products/p_x/license-token';
    expect(await call(ctx, { method: 'GET', url })).toMatchObject({ status: 401, body: { error: { code: 'missing_api_key' } } });
    expect(await call(ctx, { method: 'PUT', url, json: { enabled: true } })).toMatchObject({ status: 401 });
    expect(await call(ctx, { method: 'POST', url: `${url}/key-pair`, json: {}, headers: { authorization: 'Bearer sk_nope' } })).toMatchObject({ status: 403 });
  });

  it("a token does not verify with another product's key, nor after its payload is altered", async () => {
    const t = await createTenant(ctx);
    const a = await createProduct(ctx, t, { name: 'A' });
    const b = await createProduct(ctx, t, { name: 'B' });
    const configA = await configureTokens(ctx, t, a.id);
    const configB = await configureTokens(ctx, t, b.id);
    const l = await createLicense(ctx, t, a.id, { maxDevices: 1 });
    const token = (await publicActivate(ctx, l.key, a.id)).body.token as string;
    await expect(verifyWithJwk(token, configB.publicKeyJwk)).rejects.toThrow(/signature/);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    claims.license.maxDevices = 1000;
    const forged = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    await expect(verifyWithJwk(forged, configA.publicKeyJwk)).rejects.toThrow(/signature/);
  });

  it('a removed device gets no new token', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    await configureTokens(ctx, t, p.id);
    const l = await createLicense(ctx, t, p.id);
    await publicActivate(ctx, l.key, p.id, 'dev-1');
    expect((await refreshToken(ctx, l.key, p.id, 'dev-1')).status).toBe(200);
    await call(ctx, { method: 'DELETE', url: '/api/v1/public/licenses/device', json: { licenseKey: l.key, deviceIdentifier: 'dev-1', productId: p.id } });
    expect(await refreshToken(ctx, l.key, p.id, 'dev-1')).toMatchObject({ status: 400, body: { error: { code: 'invalid_license' } } });
  });
});

forEachStore('license tokens: rate limits', (kind) => {
  const ctx = useTestApp(kind, { env: { RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '3' } });

  it('token refresh and the public key are limited per client like the other public routes', async () => {
    for (const request of [
      () => refreshToken(ctx, 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', 'p_x'),
      () => call(ctx, { method: 'GET', url: '/api/v1/public/products/p_x/license-token/public-key' }),
    ]) {
      for (let i = 0; i < 3; i++) expect((await request()).status).not.toBe(429);
      const limited = await request();
      expect(limited).toMatchObject({ status: 429, body: { error: { code: 'rate_limited' } } });
      // Seconds until the one-minute window, begun a moment ago, ends.
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(50);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
  });
});

describe('SecretBox', () => {
  const root = Buffer.alloc(32, 7);

  it('round-trips, and never gives the same ciphertext twice', () => {
    const box = new SecretBox(root, 'test');
    const a = box.seal('secret', 'p_1');
    expect(a).toMatch(/^v1\./);
    expect(a).not.toBe(box.seal('secret', 'p_1'));
    expect(a).not.toContain('secret');
    expect(box.open(a, 'p_1')).toBe('secret');
  });

  it('refuses another context, another purpose, another root secret, tampering and unknown formats', () => {
    const box = new SecretBox(root, 'test');
    const sealed = box.seal('secret', 'p_1');
    expect(() => box.open(sealed, 'p_2')).toThrow();
    expect(() => new SecretBox(root, 'other').open(sealed, 'p_1')).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8), 'test').open(sealed, 'p_1')).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[14] = raw[14]! ^ 1;
    expect(() => box.open(`v1.${raw.toString('base64url')}`, 'p_1')).toThrow();
    expect(() => box.open(`v2.${sealed.slice(3)}`, 'p_1')).toThrow(/format/);
    expect(() => box.open('v1.AAAA', 'p_1')).toThrow(/truncated/);
    expect(() => new SecretBox(Buffer.alloc(16), 'test')).toThrow();
  });
});

import { exportPKCS8, generateKeyPair as joseKeyPair } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type Tenant, useTestApp } from '../../../test/support/app.ts';
import { verifyWithJwk } from '../../../test/support/license-tokens.ts';
import { forEachStore } from '../../../test/support/stores.ts';
import { Tessera, TesseraError } from '../src/index.ts';

/** Resolves to the TesseraError a call rejects with. */
async function failure(promise: Promise<unknown>): Promise<TesseraError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TesseraError);
  return error as TesseraError;
}

forEachStore('server SDK against a running server', (kind) => {
  const ctx = useTestApp(kind);
  let baseUrl: string;
  let tenant: Tenant;
  let tessera: Tessera;

  beforeAll(async () => {
    baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    tenant = await createTenant(ctx);
    tessera = new Tessera({ apiKey: tenant.apiKey, baseUrl });
  });

  it('manages products', async () => {
    const product = await tessera.products.create({ name: 'Editor', fallbackEnabled: true, portalDeviceResetLimit: 5 });
    expect(product).toMatchObject({ id: expect.stringMatching(/^p_/), name: 'Editor', fallbackEnabled: true, portalShow: true, portalDeviceResetLimit: 5, portalDeviceResetWindowDays: 30 });
    expect(await tessera.products.get(product.id)).toEqual(product);
    expect(await tessera.products.update(product.id, { description: 'A text editor' })).toMatchObject({ description: 'A text editor' });
    expect((await tessera.products.list()).map((p) => p.id)).toContain(product.id);
    await tessera.licenses.create({ productId: product.id, type: 'perpetual', maxDevices: 1 });
    const refused = await failure(tessera.products.delete(product.id));
    expect(refused).toMatchObject({ status: 400, code: 'product_has_licenses' });
    expect(await tessera.products.delete(product.id, { force: true })).toBeUndefined();
    expect(await failure(tessera.products.get(product.id))).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('manages licenses and devices', async () => {
    const { id: productId } = await tessera.products.create({ name: 'Suite' });
    const license = await tessera.licenses.create({ productId, type: 'timed', expiresAt: '2031-01-01', maxDevices: 2, email: 'a@example.com' });
    expect(license).toMatchObject({ key: expect.stringMatching(/^[A-Z2-9]{5}(-[A-Z2-9]{5}){4}$/), expiresAt: '2031-01-01T00:00:00.000Z', activeDevices: [] });
    expect(await tessera.licenses.get(license.key)).toEqual(license);
    expect(await tessera.licenses.update(license.key, { maxDevices: 3 })).toMatchObject({ maxDevices: 3 });

    const activated = await tessera.licenses.activate(license.key, { productId, device: { identifier: 'mac-1', name: 'Mac' } });
    expect(activated.activeDevices).toEqual([{ identifier: 'mac-1', name: 'Mac', activationDate: expect.any(String), lastSeenAt: expect.any(String), leaseExpiresAt: null }]);
    await tessera.licenses.activate(license.key, { productId, device: { identifier: 'pc/2', name: 'PC' } });
    expect(await tessera.licenses.validate(license.key, { productId, deviceIdentifier: 'mac-1' })).toMatchObject({ isValid: true, status: 'active', device: { identifier: 'mac-1' } });
    expect((await tessera.devices.remove(license.key, 'pc/2')).activeDevices.map((d) => d.identifier)).toEqual(['mac-1']);
    expect((await tessera.devices.reset(license.key)).activeDevices).toEqual([]);

    const second = await tessera.licenses.create({ productId, type: 'perpetual', maxDevices: 1, email: 'b@example.com' });
    const page = await tessera.licenses.list(productId, { limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.nextCursor).toEqual(expect.any(String));
    const all: string[] = [];
    for await (const l of tessera.licenses.listAll(productId)) all.push(l.key);
    expect(all.sort()).toEqual([license.key, second.key].sort());
    expect((await tessera.licenses.list(productId, { email: 'B@example.com' })).data.map((l) => l.key)).toEqual([second.key]);

    expect(await tessera.licenses.revoke(second.key)).toMatchObject({ revoked: true });
    expect(await failure(tessera.licenses.activate(second.key, { productId, device: { identifier: 'x', name: 'X' } }))).toMatchObject({
      status: 400,
      code: 'license_revoked',
      message: 'License is revoked.',
    });
    expect(await tessera.licenses.delete(second.key)).toBeUndefined();
    expect(await failure(tessera.licenses.get(second.key))).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('sets entitlements, metadata and floating settings, and rotates a key', async () => {
    const product = await tessera.products.create({ name: 'Pro', defaultEntitlements: ['pro'], floating: { enabled: true, leaseSeconds: 120 } });
    expect(product).toMatchObject({ defaultEntitlements: ['pro'], floating: { enabled: true, leaseSeconds: 120 } });
    const license = await tessera.licenses.create({ productId: product.id, type: 'perpetual', maxDevices: 1, metadata: { crm: '1' } });
    expect(license).toMatchObject({ entitlements: ['pro'], metadata: { crm: '1' } });
    expect(await tessera.licenses.update(license.key, { entitlements: ['pro', 'sso'], metadata: { crm: null } })).toMatchObject({ entitlements: ['pro', 'sso'], metadata: {} });
    const rotated = await tessera.licenses.rotateKey(license.key);
    expect(rotated.key).not.toBe(license.key);
    expect(await failure(tessera.licenses.get(license.key))).toMatchObject({ status: 404 });
  });

  it('sets and deletes a product image (plus plan only), and resends the purchase e-mail', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5b5a0b40000000049454e44ae426082', 'hex');
    const { id: productId } = await tessera.products.create({ name: 'Pictured' });
    expect(await failure(tessera.products.setImage(productId, png, 'image/png'))).toMatchObject({ status: 403, code: 'plan_required' });
    const plus = new Tessera({ apiKey: (await createTenant(ctx, 'plus')).apiKey, baseUrl });
    const { id: plusProduct } = await plus.products.create({ name: 'Pictured' });
    expect(await plus.products.setImage(plusProduct, png, 'image/png')).toMatchObject({ id: plusProduct, hasImage: true });
    expect(await failure(plus.products.setImage(plusProduct, Buffer.from('<svg/>'), 'image/png'))).toMatchObject({ status: 415, code: 'unsupported_media_type' });
    expect(await plus.products.deleteImage(plusProduct)).toBeUndefined();
    expect((await plus.products.get(plusProduct)).hasImage).toBe(false);

    const withEmail = await tessera.licenses.create({ productId, type: 'perpetual', maxDevices: 1, email: 'buyer@example.com', sendEmail: true });
    expect(await tessera.licenses.sendEmail(withEmail.key)).toBeUndefined();
    const without = await tessera.licenses.create({ productId, type: 'perpetual', maxDevices: 1 });
    expect(await failure(tessera.licenses.sendEmail(without.key))).toMatchObject({ status: 400 });
  });

  it('configures license tokens and key pairs', async () => {
    const { id: productId } = await tessera.products.create({ name: 'Tokens' });
    const { id: sibling } = await tessera.products.create({ name: 'Sibling' });
    expect(await tessera.licenseTokens.get(productId)).toMatchObject({ enabled: false, keyId: null });
    const on = await tessera.licenseTokens.update(productId, { enabled: true, validitySeconds: 3600 });
    expect(on).toMatchObject({ enabled: true, validitySeconds: 3600, keyId: expect.any(String), publicKeyJwk: { kty: 'EC', crv: 'P-256' } });
    const rotated = await tessera.licenseTokens.newKeyPair(productId);
    expect(rotated.keyId).not.toBe(on.keyId);
    expect((await tessera.licenseTokens.copyKeyPair(sibling, productId)).keyId).toBe(rotated.keyId);
    const pem = await exportPKCS8((await joseKeyPair('ES256', { extractable: true })).privateKey);
    const imported = await tessera.licenseTokens.importKeyPair(productId, pem);
    expect(imported.keyId).not.toBe(rotated.keyId);
    const bad = await failure(tessera.licenseTokens.importKeyPair(productId, 'not a key'));
    expect(bad).toMatchObject({ status: 400, code: 'invalid_request', issues: [{ path: 'privateKeyPem' }] });

    const license = await tessera.licenses.create({ productId, type: 'perpetual', maxDevices: 1 });
    const res = await fetch(`${baseUrl}/api/v1/public/licenses/activate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ licenseKey: license.key, deviceIdentifier: 'd', deviceName: 'D', productId }),
    });
    await verifyWithJwk((await res.json()).token, imported.publicKeyJwk!);
  });

  it('creates private portal sessions', async () => {
    const session = await tessera.portal.createPrivateSession('customer@example.com');
    expect(session).toEqual({ url: expect.stringMatching(/^https?:\/\//), expiresAt: expect.any(String) });
    const hours = (Date.parse(session.expiresAt) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(11.9);
    expect(hours).toBeLessThanOrEqual(12);
    expect(await failure(tessera.portal.createPrivateSession('not-an-address'))).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it("carries status and code on errors: bad input, another account's objects, bad keys, no server", async () => {
    const invalid = await failure(tessera.products.create({ name: '' }));
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request', issues: [expect.objectContaining({ path: expect.any(String) })] });
    const other = new Tessera({ apiKey: (await createTenant(ctx)).apiKey, baseUrl });
    const { id } = await tessera.products.create({ name: 'Mine' });
    expect(await failure(other.products.get(id))).toMatchObject({ status: 404, code: 'not_found' });
    expect(await failure(other.licenseTokens.get(id))).toMatchObject({ status: 404, code: 'not_found' });
    expect(await failure(new Tessera({ apiKey: 'sk_wrong', baseUrl }).products.list())).toMatchObject({ status: 403, code: 'invalid_api_key' });
    expect(await failure(new Tessera({ apiKey: 'sk_x', baseUrl: 'http://127.0.0.1:9' }).products.list())).toMatchObject({ status: 0, code: 'network_error' });
  });
});

describe('server SDK configuration', () => {
  it('reads the API key and base URL from the environment, and requires both', () => {
    const saved = { key: process.env.TESSERA_API_KEY, url: process.env.TESSERA_BASE_URL };
    try {
      delete process.env.TESSERA_API_KEY;
      delete process.env.TESSERA_BASE_URL;
      expect(() => new Tessera()).toThrow(/API key/);
      expect(() => new Tessera({ apiKey: 'sk_x' })).toThrow(/server address/);
      process.env.TESSERA_API_KEY = 'sk_env';
      process.env.TESSERA_BASE_URL = 'http://127.0.0.1:1/';
      expect(() => new Tessera()).not.toThrow();
    } finally {
      if (saved.key === undefined) delete process.env.TESSERA_API_KEY;
      else process.env.TESSERA_API_KEY = saved.key;
      if (saved.url === undefined) delete process.env.TESSERA_BASE_URL;
      else process.env.TESSERA_BASE_URL = saved.url;
    }
  });

  it('sends the API key and times out', async () => {
    const seen: Request[] = [];
    const tessera = new Tessera({
      apiKey: 'sk_abc',
      baseUrl: 'http://tessera.test/',
      timeoutMs: 50,
      fetch: async (input, init) => {
        seen.push(new Request(input as URL, init));
        return new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
      },
    });
    expect(await failure(tessera.licenses.get('K'))).toMatchObject({ status: 0, code: 'timeout' });
    expect(seen[0]!.url).toBe('http://tessera.test/api/v1/licenses');
    expect(seen[0]!.headers.get('authorization')).toBe('Bearer sk_abc');
    expect(seen[0]!.headers.get('license-key')).toBe('K');
  });
});

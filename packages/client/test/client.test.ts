import { webcrypto } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../../../test/support/app.ts';
import { configureTokens, replaceKeyPair } from '../../../test/support/license-tokens.ts';
import { forEachStore } from '../../../test/support/stores.ts';
import { LicenseClient, type LicenseClientOptions, MemoryTokenStorage, type PublicJwk } from '../src/index.ts';

const DAY = 86_400_000;

/** A port that accepts connections and never answers: what a hung server looks like. */
async function silentServer(): Promise<{ url: string; server: Server }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, server };
}

forEachStore('client SDK against a running server', (kind) => {
  const ctx = useTestApp(kind);
  let baseUrl: string;
  let tenant: Tenant;
  let productId: string;
  let publicKey: PublicJwk;
  let silent: { url: string; server: Server };
  const closedUrl = 'http://127.0.0.1:9'; // discard port: connection refused

  beforeAll(async () => {
    baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    tenant = await createTenant(ctx);
    productId = (await createProduct(ctx, tenant)).id;
    publicKey = (await configureTokens(ctx, tenant, productId, { enabled: true, validitySeconds: 7 * 86_400 })).publicKeyJwk as PublicJwk;
    silent = await silentServer();
  });
  afterAll(() => silent?.server.close());

  const client = (options: Partial<LicenseClientOptions> = {}) => new LicenseClient({ baseUrl, productId, publicKey, ...options });
  const license = (fields: Record<string, unknown> = {}) => createLicense(ctx, tenant, productId, fields);

  /** An activated device with its token stored. */
  async function activated(fields: Record<string, unknown> = {}, device = 'dev-1') {
    const l = await license(fields);
    const storage = new MemoryTokenStorage();
    const result = await client({ storage }).activate({ licenseKey: l.key, deviceIdentifier: device, deviceName: 'Laptop' });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    return { key: l.key, storage, token: (await storage.get())! };
  }

  it('activates, verifies and stores the token', async () => {
    const l = await license({ email: 'buyer@example.com' });
    const storage = new MemoryTokenStorage();
    const result = await client({ storage }).activate({ licenseKey: l.key, deviceIdentifier: 'dev-1', deviceName: 'Laptop' });
    expect(result).toMatchObject({ ok: true, value: { isValid: true, status: 'active', device: { identifier: 'dev-1' }, license: { key: l.key } } });
    const token = await storage.get();
    expect(token).toBe(result.ok && result.value.token);
    expect(await client().verifyToken(token!, 'dev-1')).toMatchObject({
      valid: true,
      status: 'active',
      limited: false,
      claims: { license: { key: l.key, productId, email: 'buyer@example.com' }, device: { identifier: 'dev-1', name: 'Laptop' } },
    });
  });

  it('reports activation failures as values with the server code and status', async () => {
    const l = await license({ maxDevices: 1 });
    await client().activate({ licenseKey: l.key, deviceIdentifier: 'a', deviceName: 'A' });
    expect(await client().activate({ licenseKey: l.key, deviceIdentifier: 'b', deviceName: 'B' })).toEqual({
      ok: false,
      error: { code: 'max_devices_reached', message: expect.any(String), status: 400 },
    });
    const bad = await client().activate({ licenseKey: l.key, deviceIdentifier: 'x'.repeat(97), deviceName: 'B' });
    expect(bad).toMatchObject({ ok: false, error: { code: 'invalid_request', status: 400, issues: [{ path: expect.stringContaining('deviceIdentifier') }] } });
  });

  it('never stores a token that does not verify with the configured key', async () => {
    const other = await createProduct(ctx, tenant, { name: 'Other' });
    const wrongKey = (await configureTokens(ctx, tenant, other.id)).publicKeyJwk as PublicJwk;
    const l = await license();
    const storage = new MemoryTokenStorage();
    const result = await client({ storage, publicKey: wrongKey }).activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'D' });
    expect(result).toMatchObject({ ok: false, error: { code: 'unknown_key' } });
    expect(await storage.get()).toBeNull();
  });

  it('validates online, and removes a device (forgetting its token)', async () => {
    const { key, storage } = await activated();
    const c = client({ storage });
    expect(await c.validate({ licenseKey: key, deviceIdentifier: 'dev-1' })).toMatchObject({ ok: true, value: { isValid: true, status: 'active' } });
    expect(await c.validate({ licenseKey: key, deviceIdentifier: 'nope' })).toMatchObject({ ok: true, value: { isValid: false, reason: 'device_not_activated' } });
    expect(await c.removeDevice({ licenseKey: key, deviceIdentifier: 'dev-1' })).toEqual({ ok: true, value: undefined });
    expect(await storage.get()).toBeNull();
    expect(await c.validate({ licenseKey: key, deviceIdentifier: 'dev-1' })).toMatchObject({ ok: true, value: { isValid: false } });
  });

  it('fetches tokens and the public key; token errors are values', async () => {
    const { key } = await activated();
    const fetched = await client().fetchToken({ licenseKey: key, deviceIdentifier: 'dev-1' });
    expect(fetched.ok && (await client().verifyToken(fetched.value.token, 'dev-1')).valid).toBe(true);
    expect(await client().fetchToken({ licenseKey: key, deviceIdentifier: 'other' })).toMatchObject({ ok: false, error: { code: 'invalid_license', status: 400 } });
    expect(await client().fetchPublicKey()).toEqual({ ok: true, value: publicKey });
    const plain = await createProduct(ctx, tenant, { name: 'No tokens' });
    expect(await client({ productId: plain.id }).fetchPublicKey()).toMatchObject({ ok: false, error: { code: 'not_found', status: 404 } });
  });

  it('verifies offline: product, device, signature, malformed input, expiries and fallback', async () => {
    const { token } = await activated();
    expect(await client({ productId: 'p_other' }).verifyToken(token, 'dev-1')).toMatchObject({ valid: false, code: 'product_mismatch' });
    expect(await client({ productId: ['p_other', productId] }).verifyToken(token, 'dev-1')).toMatchObject({ valid: true });
    expect(await client().verifyToken(token, 'dev-2')).toMatchObject({ valid: false, code: 'device_mismatch' });
    expect(await client({ publicKey: { ...publicKey, kid: 'other' } }).verifyToken(token, 'dev-1')).toMatchObject({ valid: false, code: 'unknown_key' });
    const [h, p, s] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 1e6 })).toString('base64url')}.${s}`;
    expect(await client().verifyToken(forged, 'dev-1')).toMatchObject({ valid: false, code: 'bad_signature' });
    expect(await client().verifyToken(`${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`, 'dev-1')).toMatchObject({ valid: false, code: 'malformed' });
    for (const junk of ['', 'a.b', 'a.b.c', `${h}.${p}.!!!`]) expect(await client().verifyToken(junk, 'dev-1')).toMatchObject({ valid: false });
    const later = Date.now() + 8 * DAY;
    expect(await client({ now: () => later }).verifyToken(token, 'dev-1')).toMatchObject({ valid: false, code: 'token_expired', claims: { device: { identifier: 'dev-1' } } });

    const timed = await activated({ type: 'timed', expiresAt: new Date(Date.now() + DAY).toISOString() });
    expect(await client({ now: () => Date.now() + 2 * DAY }).verifyToken(timed.token, 'dev-1')).toMatchObject({ valid: false, code: 'license_expired' });
  });

  it('reports a fallbacked license as valid but limited', async () => {
    const fallback = await createProduct(ctx, tenant, { name: 'Fallback', fallbackEnabled: true });
    const key = (await configureTokens(ctx, tenant, fallback.id)).publicKeyJwk as PublicJwk;
    const l = await createLicense(ctx, tenant, fallback.id, { type: 'timed', expiresAt: '2035-01-01' });
    const storage = new MemoryTokenStorage();
    const c = client({ productId: fallback.id, publicKey: key, storage });
    await c.activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'D' });
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...tenant.auth, 'license-key': l.key }, json: { expiresAt: '2020-01-01' } });
    const fetched = await c.fetchToken({ licenseKey: l.key, deviceIdentifier: 'd' });
    expect(fetched.ok && (await c.verifyToken(fetched.value.token, 'd'))).toMatchObject({ valid: true, status: 'fallbacked', limited: true });
  });

  it('validateAndRefreshToken: fresh token is valid without a request; no token asks for activation', async () => {
    const { storage } = await activated();
    const offline = client({ storage, baseUrl: closedUrl });
    expect(await offline.validateAndRefreshToken('dev-1')).toMatchObject({ valid: true, offline: false, refreshed: false, tokenExpired: false });
    expect(await client().validateAndRefreshToken('dev-1')).toMatchObject({ valid: false, code: 'no_token', needsActivation: true });
  });

  it('refreshes inside the refresh window and stores the new token only after verifying it', async () => {
    const { storage, token } = await activated();
    const inWindow = Date.now() + 5 * DAY; // 2 days left of 7, default window is 3 days
    const state = await client({ storage, now: () => inWindow }).validateAndRefreshToken('dev-1');
    expect(state).toMatchObject({ valid: true, refreshed: true, offline: false });
    const stored = (await storage.get())!;
    expect(stored).not.toBe(token);
    expect(await client().verifyToken(stored, 'dev-1')).toMatchObject({ valid: true });
    // A configurable window: with 1 day, the same moment needs no refresh.
    expect(await client({ storage, now: () => inWindow, refreshBeforeExpirySeconds: 86_400 }).validateAndRefreshToken('dev-1')).toMatchObject({ refreshed: false });
  });

  it('an expired token with the server unreachable or hung is "valid but offline", never a re-activation', async () => {
    const { storage, token } = await activated();
    const afterExpiry = () => Date.now() + 8 * DAY;
    for (const url of [closedUrl, silent.url]) {
      const state = await client({ storage, baseUrl: url, now: afterExpiry, timeoutMs: 300 }).validateAndRefreshToken('dev-1');
      expect(state).toMatchObject({ valid: true, offline: true, tokenExpired: true, refreshed: false, status: 'active' });
    }
    expect(await storage.get()).toBe(token);
    const timeout = await client({ baseUrl: silent.url, timeoutMs: 200 }).validate({ licenseKey: 'K', deviceIdentifier: 'd' });
    expect(timeout).toMatchObject({ ok: false, error: { code: 'timeout' } });
    const refused = await client({ baseUrl: closedUrl }).validate({ licenseKey: 'K', deviceIdentifier: 'd' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'network_error' } });
    // In the refresh window with no network: still valid, and flagged offline.
    expect(await client({ storage, baseUrl: closedUrl, now: () => Date.now() + 5 * DAY }).validateAndRefreshToken('dev-1')).toMatchObject({ valid: true, offline: true, tokenExpired: false });
  });

  it("an expired token is renewed when the server is reachable; the server's verdict on a revoked or removed license wins", async () => {
    const { key, storage } = await activated();
    // The stored token is checked "8 days later" (expired); the server's new token is then
    // checked at the server's own time, as it would be once the device's clock caught up.
    const readings = [Date.now() + 8 * DAY];
    const clock = () => readings.shift() ?? Date.now();
    const before = await storage.get();
    expect(await client({ storage, now: clock }).validateAndRefreshToken('dev-1')).toMatchObject({ valid: true, refreshed: true, offline: false });
    expect(await storage.get()).not.toBe(before);

    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...tenant.auth, 'license-key': key }, json: { revoked: true } });
    const revoked = await client({ storage, now: () => Date.now() + 5 * DAY }).validateAndRefreshToken('dev-1');
    expect(revoked).toMatchObject({ valid: false, code: 'license_revoked', needsActivation: false });
    expect(await storage.get()).toBeNull();

    const removed = await activated({}, 'dev-9');
    await client().removeDevice({ licenseKey: removed.key, deviceIdentifier: 'dev-9' });
    const state = await client({ storage: removed.storage, now: () => Date.now() + 5 * DAY }).validateAndRefreshToken('dev-9');
    expect(state).toMatchObject({ valid: false, code: 'invalid_license', needsActivation: true });
  });

  it('follows a key rotation when the app holds both keys, and keeps an unverifiable new token out of storage', async () => {
    const rotating = await createProduct(ctx, tenant, { name: 'Rotating' });
    const oldKey = (await configureTokens(ctx, tenant, rotating.id)).publicKeyJwk as PublicJwk;
    const l = await createLicense(ctx, tenant, rotating.id);
    const storage = new MemoryTokenStorage();
    await client({ productId: rotating.id, publicKey: oldKey, storage }).activate({ licenseKey: l.key, deviceIdentifier: 'd', deviceName: 'D' });
    const oldToken = await storage.get();
    const newKey = (await replaceKeyPair(ctx, tenant, rotating.id)).body.publicKeyJwk as PublicJwk;
    const inWindow = () => Date.now() + 5 * DAY;

    // An app that only knows the old key keeps its (still genuine) token and does not store the new one.
    const oldApp = client({ productId: rotating.id, publicKey: oldKey, storage, now: inWindow });
    expect(await oldApp.validateAndRefreshToken('d')).toMatchObject({ valid: true, refreshed: false });
    expect(await storage.get()).toBe(oldToken);

    const updatedApp = client({ productId: rotating.id, publicKey: [oldKey, newKey], storage, now: inWindow });
    expect(await updatedApp.validateAndRefreshToken('d')).toMatchObject({ valid: true, refreshed: true });
    const stored = (await storage.get())!;
    expect(JSON.parse(Buffer.from(stored.split('.')[0]!, 'base64url').toString()).kid).toBe(newKey.kid);
  });

  it('without WebCrypto (Node 18 with no options.crypto): no_webcrypto as a value, nothing sent, the stored token kept', async () => {
    const { key, storage, token } = await activated();
    const requests: string[] = [];
    const counting: typeof fetch = (input, init) => (requests.push(String(input)), fetch(input, init));
    vi.stubGlobal('crypto', undefined); // what Node 18 has: no global WebCrypto
    try {
      const bare = client({ storage, fetch: counting });
      const noCrypto = { code: 'no_webcrypto', message: expect.stringContaining("crypto: (await import('node:crypto')).webcrypto") };
      expect(await bare.activate({ licenseKey: key, deviceIdentifier: 'dev-2', deviceName: 'D' })).toEqual({ ok: false, error: noCrypto });
      expect(await bare.verifyToken(token, 'dev-1')).toEqual({ valid: false, ...noCrypto });
      expect(await bare.validateAndRefreshToken('dev-1')).toEqual({ valid: false, ...noCrypto, needsActivation: false });
      expect(requests).toEqual([]);
      expect(await storage.get()).toBe(token);
      // The option is what makes it work there.
      expect(await client({ storage, crypto: webcrypto }).validateAndRefreshToken('dev-1')).toMatchObject({ valid: true });
    } finally {
      vi.unstubAllGlobals();
    }
    expect(await client().validate({ licenseKey: key, deviceIdentifier: 'dev-2' })).toMatchObject({ ok: true, value: { isValid: false, reason: 'device_not_activated' } });
  });

  it('refuses to work without a public key rather than trusting an unverified token', async () => {
    const { storage } = await activated();
    expect(await client({ storage, publicKey: undefined }).validateAndRefreshToken('dev-1')).toMatchObject({ valid: false, code: 'no_public_key' });
  });
});

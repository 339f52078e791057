import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTenant, useTestApp } from '../../../test/support/app.ts';
import { useNode18Package } from '../../../test/support/node18.ts';

// The SDK promises Node 18+ (issue 3): this runs the built package under a real Node 18 (NODE18_BIN).
const PACKAGE = join(import.meta.dirname, '..');
const FLOW = join(import.meta.dirname, 'fixtures/server-flow.mjs');

const ok = (value: unknown) => ({ ok: true, value });
const failed = (status: number, code: string, more: Record<string, unknown> = {}) => ({
  ok: false,
  error: { class: 'TesseraError', isError: true, name: 'TesseraError', status, code, ...more },
});

describe('server SDK on Node 18 (built package) [sqlite]', () => {
  const ctx = useTestApp('sqlite');
  const node18 = useNode18Package('server SDK', PACKAGE, ctx);

  it.runIf(node18.available)('manages products, licenses, devices, license tokens and portal sessions, and fails with status and code', async () => {
    const tenant = await createTenant(ctx);
    const plus = await createTenant(ctx, 'plus');
    const params = { plusApiKey: plus.apiKey, closedUrl: 'http://127.0.0.1:9' /* discard port: connection refused */, silentUrl: node18.silentUrl };
    // new Tessera() gets the API key and the server's address from the environment only.
    const env = { TESSERA_API_KEY: tenant.apiKey, TESSERA_BASE_URL: `${node18.baseUrl}/` };
    const summary = await node18.run(FLOW, { params, env });

    expect(summary.node).toMatch(/^v18\./);
    expect(summary.fetch).toBe('function');

    const product = summary.products.create.value;
    expect(summary.products.create).toMatchObject(
      ok({ id: expect.stringMatching(/^p_/), userId: tenant.accountId, name: 'Node 18 Tool', fallbackEnabled: true, portalDeviceResetLimit: 5, portalDeviceResetWindowDays: 30 }),
    );
    expect(summary.products.get).toEqual(ok(product));
    expect(summary.products.update).toEqual(ok({ ...product, description: 'Made on Node 18' }));
    expect(summary.products.listIds).toEqual([product.id]);

    expect(summary.licenseTokens.get).toMatchObject(ok({ enabled: false, keyId: null, publicKeyJwk: null }));
    const tokens = summary.licenseTokens.update.value;
    expect(summary.licenseTokens.update).toMatchObject(ok({ enabled: true, validitySeconds: 3600, keyId: expect.any(String), publicKeyJwk: { kty: 'EC', crv: 'P-256', alg: 'ES256' } }));
    expect(summary.licenseTokens.getAfter).toEqual(ok(tokens));

    const license = summary.licenses.create.value;
    const second = summary.licenses.createSecond.value;
    expect(summary.licenses.create).toMatchObject(
      ok({ key: expect.stringMatching(/^[A-Z2-9]{5}(-[A-Z2-9]{5}){4}$/), productId: product.id, type: 'timed', expiresAt: '2031-01-01T00:00:00.000Z', maxDevices: 2, email: 'buyer@example.com', activeDevices: [] }),
    );
    expect(summary.licenses.get).toEqual(ok(license));
    expect(summary.licenses.update).toEqual(ok({ ...license, maxDevices: 3 }));
    expect(summary.licenses.listPage).toMatchObject(ok({ data: [expect.objectContaining({ productId: product.id })], nextCursor: expect.any(String) }));
    expect(summary.licenses.listByEmail).toEqual([license.key]);
    expect(summary.licenses.listAll).toEqual([license.key, second.key].sort());
    expect(summary.licenses.revoke).toMatchObject(ok({ key: second.key, revoked: true }));
    expect(summary.licenses.delete).toEqual({ ok: true }); // DELETE resolves with undefined

    const srv = { identifier: 'srv-1', name: 'Build server', activationDate: expect.any(String) };
    expect(summary.devices.activate).toMatchObject(ok({ key: license.key, activeDevices: [srv] }));
    expect(summary.devices.activateSecond.value.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(['srv-1', 'ci/2']);
    expect(summary.devices.validate).toMatchObject(ok({ isValid: true, status: 'active', device: srv, license: { key: license.key } }));
    expect(summary.devices.validateUnknown).toMatchObject(ok({ isValid: false, device: null }));
    expect(summary.devices.remove).toMatchObject(ok({ activeDevices: [srv] }));
    expect(summary.devices.reset).toMatchObject(ok({ activeDevices: [] }));

    expect(summary.portal).toEqual(ok({ url: expect.stringMatching(/^https?:\/\//), expiresAt: expect.any(String) }));
    const hours = (Date.parse(summary.portal.value.expiresAt) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(11.9);
    expect(hours).toBeLessThanOrEqual(12);

    expect(summary.image.set).toMatchObject(ok({ hasImage: true }));
    expect(summary.image.delete).toEqual({ ok: true });
    expect(summary.image.after).toBe(false);
    expect(summary.image.freePlan).toMatchObject(failed(403, 'plan_required'));

    expect(summary.errors.productNotFound).toMatchObject(failed(404, 'not_found'));
    expect(summary.errors.licenseNotFound).toMatchObject(failed(404, 'not_found'));
    expect(summary.errors.invalidRequest).toMatchObject(failed(400, 'invalid_request', { issues: [expect.objectContaining({ path: expect.any(String) })] }));
    // An unknown key is 403 invalid_api_key (docs/api.md); 401 is only for no key at all, which the SDK never sends.
    expect(summary.errors.badApiKey).toMatchObject(failed(403, 'invalid_api_key', { message: 'Invalid API key.' }));
    expect(summary.errors.refusedDelete).toMatchObject(failed(400, 'product_has_licenses'));
    expect(summary.errors.networkError).toMatchObject(failed(0, 'network_error', { message: expect.stringContaining('http://127.0.0.1:9') }));
    expect(summary.errors.timeout).toMatchObject(failed(0, 'timeout', { message: 'No answer within 300 ms' }));
    expect(summary.forceDelete).toEqual({ ok: true });
    expect(summary.afterDelete).toMatchObject(failed(404, 'not_found'));

    expect(summary.withoutEnv).toEqual({ apiKey: expect.stringMatching(/no API key/), baseUrl: expect.stringMatching(/no server address/) });
  });
});

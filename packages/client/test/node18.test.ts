import { webcrypto } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLicense, createProduct, createTenant, useTestApp } from '../../../test/support/app.ts';
import { configureTokens } from '../../../test/support/license-tokens.ts';
import { useNode18Package } from '../../../test/support/node18.ts';
import type { LicenseClientOptions } from '../src/index.ts';

// The SDK promises Node 18+ (issue 3): this runs the built package under a real Node 18 (NODE18_BIN).
const PACKAGE = join(import.meta.dirname, '..');
const FLOW = join(import.meta.dirname, 'fixtures/node-flow.mjs');

// What a Node 18 user passes must fit the option's type (checked by the typecheck, not at run time).
const nodeCrypto: LicenseClientOptions['crypto'] = webcrypto;
void nodeCrypto;

describe('client SDK on Node 18 (built package) [sqlite]', () => {
  const ctx = useTestApp('sqlite');
  const node18 = useNode18Package('client SDK', PACKAGE, ctx);

  it.runIf(node18.available)('activates, verifies offline, validates, refreshes, fetches a token and removes the device', async () => {
    const tenant = await createTenant(ctx);
    const product = await createProduct(ctx, tenant);
    const { publicKeyJwk } = await configureTokens(ctx, tenant, product.id, { enabled: true, validitySeconds: 7 * 86_400 });
    const license = await createLicense(ctx, tenant, product.id);
    const params = {
      baseUrl: node18.baseUrl,
      productId: product.id,
      publicKey: publicKeyJwk,
      licenseKey: license.key,
      closedUrl: 'http://127.0.0.1:9', // discard port: connection refused
      silentUrl: node18.silentUrl,
    };
    const summary = await node18.run(FLOW, { params });

    expect(summary.node).toMatch(/^v18\./);
    expect(summary.globalWebCrypto).toBe(false);
    const noCrypto = { code: 'no_webcrypto', message: expect.stringContaining("(await import('node:crypto')).webcrypto") };
    expect(summary.withoutCrypto).toEqual({
      activate: { ok: false, error: noCrypto },
      verifyToken: { valid: false, ...noCrypto },
      validateAndRefreshToken: { valid: false, ...noCrypto, needsActivation: false },
      // Nothing was activated by the client that could not verify.
      serverSaw: { ok: true, value: { isValid: false, status: null, device: null, license: null, reason: 'device_not_activated' } },
    });

    const claims = { status: 'active', license: { key: license.key, productId: product.id }, device: { identifier: 'node-flow-1', name: `Node ${summary.node}` } };
    expect(summary.activate).toMatchObject({ ok: true, hasToken: true, stored: true, result: { value: { isValid: true, status: 'active', device: { identifier: 'node-flow-1' } } } });
    expect(summary.verifyToken).toMatchObject({ valid: true, status: 'active', limited: false, claims });
    expect(summary.verifyForged).toMatchObject({ valid: false, code: 'bad_signature' });
    expect(summary.verifyOtherDevice).toMatchObject({ valid: false, code: 'device_mismatch' });
    expect(summary.validate).toMatchObject({ ok: true, value: { isValid: true, status: 'active', device: { identifier: 'node-flow-1' }, license: { key: license.key } } });
    expect(summary.validateAndRefreshToken).toMatchObject({ valid: true, status: 'active', offline: false, refreshed: false, tokenExpired: false, claims });
    expect(summary.refreshInWindow).toMatchObject({ valid: true, refreshed: true, offline: false, claims });
    expect(summary.refreshStoredNewToken).toBe(true);
    expect(summary.fetchToken).toMatchObject({ ok: true, verify: { valid: true, claims } });
    expect(summary.networkError).toMatchObject({ ok: false, error: { code: 'network_error' } });
    expect(summary.timeout).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(summary.offline).toMatchObject({ valid: true, offline: true, tokenExpired: true, refreshed: false });
    expect(summary.removeDevice).toEqual({ ok: true });
    expect(summary.storageAfterRemove).toBeNull();
    expect(summary.validateAfterRemove).toMatchObject({ ok: true, value: { isValid: false, reason: 'device_not_activated' } });
  });
});

import { describe, expect, it } from 'vitest';
import { loadConfig, parseTrustProxy } from '../../src/config.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';

/** Issue 14, item 3: behind an appending proxy, the client writes the leftmost X-Forwarded-For entry. */
describe('TRUST_PROXY', () => {
  it('reads false, a number of hops, or a list of proxy addresses/CIDRs, and refuses anything else', () => {
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('1')).toBe(1);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.0/8, 192.168.1.7,::1, fd00::/8')).toEqual(['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8']);
    expect(parseTrustProxy('true')).toBe(true);
    for (const bad of ['yes', '10.0.0.0/33', 'proxy.internal', '1.2.3.4/8/1', '-1']) {
      expect(() => loadConfig({ TRUST_PROXY: bad, SECRET_KEY: 'a'.repeat(64) }), bad).toThrow(/TRUST_PROXY/);
    }
  });

  for (const [setting, proxy] of [
    ['1', '10.0.0.1'],
    ['10.0.0.0/8', '10.0.0.1'],
  ] as const) {
    describe(`TRUST_PROXY=${setting}`, () => {
      const ctx = useTestApp('sqlite', { env: { TRUST_PROXY: setting, RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '5' } });
      const validate = (body: unknown, forwardedFor: string, remoteAddress: string = proxy) =>
        call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', remoteAddress, headers: { 'x-forwarded-for': forwardedFor }, json: body });

      it('a client-chosen leftmost X-Forwarded-For entry does not bypass the limit; another real client has its own', async () => {
        const t = await createTenant(ctx);
        const p = await createProduct(ctx, t);
        const body = { licenseKey: (await createLicense(ctx, t, p.id)).key, deviceIdentifier: 'd', productId: p.id };
        const statuses: number[] = [];
        for (let i = 0; i < 8; i++) statuses.push((await validate(body, `203.0.113.${i}, 198.51.100.1`)).status);
        expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
        expect((await validate(body, '198.51.100.2')).status).toBe(200);
      });

      if (setting !== '1') {
        it('ignores X-Forwarded-For from an address that is not a listed proxy', async () => {
          const t = await createTenant(ctx);
          const p = await createProduct(ctx, t);
          const body = { licenseKey: (await createLicense(ctx, t, p.id)).key, deviceIdentifier: 'd', productId: p.id };
          const statuses: number[] = [];
          for (let i = 0; i < 6; i++) statuses.push((await validate(body, `198.51.100.${50 + i}`, '203.0.113.200')).status);
          expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
        });
      }
    });
  }
});

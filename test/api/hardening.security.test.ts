import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { illFormedPath } from '../../src/core/text.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

/** Sends raw bytes to the listening app and returns everything it answers before closing. */
function rawRequest(port: number, request: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('error', (err) => (answer ? resolve(answer) : reject(err)));
    socket.on('close', () => resolve(answer));
    socket.end(request);
  });
}

const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

forEachStore('hardening: hostile input', (kind) => {
  const ctx = useTestApp(kind);

  describe('lone UTF-16 surrogates (issue 14, item 10)', () => {
    it.each([
      ['a lone high surrogate', '\ud800'],
      ['a lone low surrogate', 'pc-\udc00'],
      ['a reversed pair', '\udc00\ud800'],
    ])('refuses %s in a device identifier, on both APIs, and stores nothing', async (_name, bad) => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      const l = await createLicense(ctx, t, p.id);
      const pub = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: bad, deviceName: 'n', productId: p.id } });
      expect(pub.status).toBe(400);
      expect(pub.body.error.code).toBe('invalid_request');
      expect(pub.body.error.issues).toEqual([{ path: 'deviceIdentifier', message: expect.stringContaining('well-formed') }]);
      const headers = { ...t.auth, 'license-key': l.key };
      const server = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers, json: { productId: p.id, device: { identifier: 'ok', name: bad } } });
      expect(server.status).toBe(400);
      expect(server.body.error.issues[0].path).toBe('device.name');
      expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers })).body.activeDevices).toEqual([]);
    });

    it('refuses them in keys, in other text fields and in the path, and still takes valid pairs (emoji)', async () => {
      const t = await createTenant(ctx);
      const keyed = await call(ctx, { method: 'POST', url: '/api/v1/products', payload: `{"name":"x","\\ud800":1}`, headers: { ...t.auth, 'content-type': 'application/json' } });
      expect(keyed.status).toBe(400);
      const named = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: t.auth, json: { name: 'App \udbff' } });
      expect(named.status).toBe(400);
      expect(named.body.error.issues[0].path).toBe('name');
      const p = await createProduct(ctx, t, { name: 'App 😀' });
      const l = await createLicense(ctx, t, p.id);
      const ok = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, deviceIdentifier: 'pc-😀', deviceName: 'n', productId: p.id } });
      expect(ok.status).toBe(200);
      expect(ok.body.device.identifier).toBe('pc-😀');
    });
  });

  it('leaves raw bodies (bytes, not text) to their routes instead of walking them byte by byte', () => {
    const bytes = Buffer.from('{"a":1}');
    // A walk would visit this key (for-in sees it beside the byte indices) and refuse it.
    Object.defineProperty(bytes, '\ud800', { value: 'x', enumerable: true });
    expect(illFormedPath(bytes, '')).toBeUndefined();
    expect(illFormedPath({ nested: { '\ud800': 1 } }, '')).toBe('nested');
  });

  describe('framework errors through the error model (issue 14, item 11)', () => {
    let port = 0;
    it('answers a URL that does not decode with the JSON error body, without echoing it', async () => {
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      port = (ctx.app.server.address() as { port: number }).port;
      for (const path of ['/api/v1/%', '/api/v1/licenses/%zz%3Cscript%3E', '/api/v1/products/%E0%A4%A']) {
        const answer = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        expect(answer, path).toMatch(/^HTTP\/1\.1 400 /);
        expect(bodyOf(answer)).toEqual({ error: { code: 'invalid_request', message: 'The request is invalid.' } });
        expect(answer).not.toContain('FST_');
        expect(answer).not.toContain('script');
        expect(answer).not.toContain('%');
      }
    });

    it('answers a 70 KB header with 431 and the JSON error body', async () => {
      const answer = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 431 /);
      expect(answer).toMatch(/content-type: application\/json/i);
      expect(bodyOf(answer)).toEqual({ error: { code: 'headers_too_large', message: 'The request headers are too large.' } });
    });

    it('answers malformed HTTP with 400 and the JSON error body', async () => {
      const answer = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(bodyOf(answer)).toEqual({ error: { code: 'invalid_request', message: 'The request is not valid HTTP.' } });
    });
  });
});

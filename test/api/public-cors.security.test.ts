import { expect, it } from 'vitest';
import { call, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('cross-origin calls', (kind) => {
  const ctx = useTestApp(kind);
  const origin = { origin: 'https://app.example.com' };

  it('the public API answers preflights and lets any origin read its answers (apps in browsers and Electron)', async () => {
    const preflight = await call(ctx, {
      method: 'OPTIONS',
      url: '/api/v1/public/licenses/token',
      headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, POST, DELETE',
      'access-control-allow-headers': 'content-type',
    });
    const answer = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', headers: origin, json: { licenseKey: 'K', deviceIdentifier: 'd', productId: 'p' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    const error = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/token', headers: origin, json: {} });
    expect(error.status).toBe(400);
    expect(error.headers['access-control-allow-origin']).toBe('*');
  });

  it('the server API stays closed to browsers: no CORS headers, no preflight', async () => {
    const t = await createTenant(ctx);
    const res = await call(ctx, { method: 'GET', url: '/api/v1/products', headers: { ...origin, ...t.auth } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await call(ctx, { method: 'OPTIONS', url: '/api/v1/products', headers: { ...origin, 'access-control-request-method': 'GET' } });
    expect(preflight.status).toBe(404);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });
});

forEachStore('the public API scope', (kind) => {
  const ctx = useTestApp(kind);
  const origin = { origin: 'https://app.example.com' };

  it('puts its CORS headers on every public operation and on no server-API operation', async () => {
    const doc = (await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' })).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ path, method: method.toUpperCase() })));
    expect(operations.filter((o) => o.path.startsWith('/api/v1/public/')).length).toBeGreaterThanOrEqual(6);
    for (const { path, method } of operations) {
      const url = path.replace('{productId}', 'p_unknown').replace('{deviceId}', 'd');
      const res = await call(ctx, { method: method as 'GET', url, headers: origin, ...(method === 'GET' ? {} : { json: {} }) });
      const isPublic = path.startsWith('/api/v1/public/');
      expect(res.headers['access-control-allow-origin'], `${method} ${path}`).toBe(isPublic ? '*' : undefined);
    }
  });

  it('answers preflights on paths with parameters too', async () => {
    for (const url of ['/api/v1/public/products/p_x/image', '/api/v1/public/products/p_x/license-token/public-key', '/api/v1/public/licenses/device']) {
      const res = await call(ctx, { method: 'OPTIONS', url, headers: { ...origin, 'access-control-request-method': 'GET' } });
      expect(res.status, url).toBe(204);
      expect(res.headers['access-control-max-age']).toBe('86400');
    }
  });
});

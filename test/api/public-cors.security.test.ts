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

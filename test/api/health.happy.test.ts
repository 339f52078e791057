import { expect, it, vi } from 'vitest';
import { call, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('health', (kind) => {
  const ctx = useTestApp(kind);

  it('answers liveness and readiness', async () => {
    expect(await call(ctx, { method: 'GET', url: '/healthz' })).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await call(ctx, { method: 'GET', url: '/readyz' })).toMatchObject({ status: 200, body: { status: 'ok' } });
  });

  it('is not ready while the store does not answer, and says nothing more', async () => {
    const ping = vi.spyOn(ctx.store, 'ping').mockRejectedValueOnce(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
    try {
      const res = await call(ctx, { method: 'GET', url: '/readyz' });
      expect(res).toMatchObject({ status: 503, body: { status: 'unavailable' } });
      expect(JSON.stringify(res.body)).not.toContain('ECONNREFUSED');
      // Liveness does not depend on the store; readiness comes back with it.
      expect((await call(ctx, { method: 'GET', url: '/healthz' })).status).toBe(200);
      expect((await call(ctx, { method: 'GET', url: '/readyz' })).status).toBe(200);
    } finally {
      ping.mockRestore();
    }
  });

  it('serves an OpenAPI 3.1 document generated from the routes', async () => {
    const res = await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/licenses', '/api/v1/public/licenses/activate', '/api/v1/products/{productId}']),
    );
    expect(Object.keys(res.body.components.schemas)).toEqual(expect.arrayContaining(['License', 'Product']));
    const create = res.body.paths['/api/v1/licenses'].post;
    expect(create.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/License');
    expect(create.security).toEqual([{ apiKey: [] }]);
  });

  it('answers an unknown route with the JSON error model', async () => {
    expect(await call(ctx, { method: 'GET', url: '/api/v1/nope' })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
  });
});

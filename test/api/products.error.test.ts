import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('products API errors', (kind) => {
  const ctx = useTestApp(kind);

  const countProducts = async () =>
    Number((await ctx.store.read.first(ctx.store.db.selectFrom('products').select((eb) => eb.fn.countAll<number>().as('n'))))?.n);

  it.each([
    ['missing name', {}, 'name'],
    ['empty name', { name: '' }, 'name'],
    ['blank name', { name: '   ' }, 'name'],
    ['name too long', { name: 'x'.repeat(201) }, 'name'],
    ['name of the wrong type', { name: 42 }, 'name'],
    ['invalid support e-mail', { name: 'A', supportEmail: 'not-an-email' }, 'supportEmail'],
    ['non-boolean portalShow', { name: 'A', portalShow: 'yes' }, 'portalShow'],
    ['javascript: action URL', { name: 'A', actionButtonUrl: 'javascript:alert(1)' }, 'actionButtonUrl'],
    ['relative action URL', { name: 'A', actionButtonUrl: '/download' }, 'actionButtonUrl'],
  ])('rejects %s with invalid_request and stores nothing', async (_label, body, path) => {
    const t = await createTenant(ctx);
    const before = await countProducts();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: t.auth, json: body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await countProducts()).toBe(before);
  });

  it('rejects a bad PATCH and leaves the product unchanged', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const res = await call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: t.auth, json: { name: '', portalShow: true } });
    expect(res.status).toBe(400);
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}`, headers: t.auth })).body).toEqual(p);
  });

  it('answers unknown products with 404 on every operation', async () => {
    const t = await createTenant(ctx);
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await call(ctx, { method, url: '/api/v1/products/p_doesnotexist', headers: t.auth, json: method === 'PATCH' ? {} : undefined });
      expect(res).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    }
  });

  it('rejects malformed JSON, a non-JSON body and an oversized body', async () => {
    const t = await createTenant(ctx);
    const headers = { ...t.auth, 'content-type': 'application/json' };
    const malformed = await call(ctx, { method: 'POST', url: '/api/v1/products', headers, payload: '{"name": ' });
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    const text = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: { ...t.auth, 'content-type': 'text/plain' }, payload: 'name=A' });
    expect(text).toMatchObject({ status: 415, body: { error: { code: 'unsupported_media_type' } } });
    const huge = await call(ctx, { method: 'POST', url: '/api/v1/products', headers, payload: JSON.stringify({ name: 'A', description: 'x'.repeat(70 * 1024) }) });
    expect(huge).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
  });
});

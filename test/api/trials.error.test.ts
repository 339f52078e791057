import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('trial errors', (kind) => {
  const ctx = useTestApp(kind);
  const countLicenses = async () => Number((await ctx.store.read.first(ctx.store.db.selectFrom('licenses').select((eb) => eb.fn.countAll<number>().as('n'))))?.n);
  const start = (json: unknown) => call(ctx, { method: 'POST', url: '/api/v1/public/trials', json });

  it.each([
    ['no productId', { deviceIdentifier: 'd', deviceName: 'n' }, 'productId'],
    ['no deviceIdentifier', { productId: 'p_x', deviceName: 'n' }, 'deviceIdentifier'],
    ['no deviceName', { productId: 'p_x', deviceIdentifier: 'd' }, 'deviceName'],
    ['a bad e-mail', { productId: 'p_x', deviceIdentifier: 'd', deviceName: 'n', email: 'nope' }, 'email'],
    ['a blank identifier', { productId: 'PRODUCT', deviceIdentifier: '  ', deviceName: 'n' }, 'deviceIdentifier'],
  ])('rejects %s with a 400 and stores nothing', async (_label, body, path) => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { trial: { enabled: true } });
    const before = await countLicenses();
    const res = await start(JSON.parse(JSON.stringify(body).replace('PRODUCT', p.id)));
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await countLicenses()).toBe(before);
  });

  it('a product without trials, or unknown, is a 404 that reveals nothing and stores nothing', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const before = await countLicenses();
    for (const productId of [p.id, 'p_unknown']) {
      expect(await start({ productId, deviceIdentifier: 'd', deviceName: 'n' })).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: 'Product not found.' } } });
    }
    expect(await countLicenses()).toBe(before);
  });
});

forEachStore('trial rate limit', (kind) => {
  const ctx = useTestApp(kind, { env: { RATE_LIMIT: 'on', RATE_LIMIT_TRIALS_PER_CLIENT_PER_HOUR: '2' } });

  it('limits trials per client address, with Retry-After', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { trial: { enabled: true } });
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await call(ctx, { method: 'POST', url: '/api/v1/public/trials', json: { productId: p.id, deviceIdentifier: `d${i}`, deviceName: 'n' } }));
    expect(results.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(results[2]!.body.error.code).toBe('rate_limited');
    expect(Number(results[2]!.headers['retry-after'])).toBeGreaterThan(0);
  });
});

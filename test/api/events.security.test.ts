import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('account events (security)', (kind) => {
  const ctx = useTestApp(kind);

  it('needs an API key: none is 401, a wrong or revoked one 403', async () => {
    const t = await createTenant(ctx);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/events' })).body.error.code).toBe('missing_api_key');
    expect((await call(ctx, { method: 'GET', url: '/api/v1/events', headers: { authorization: `Bearer sk_${'x'.repeat(40)}` } })).status).toBe(403);
    const row = await ctx.store.read.first(ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', t.accountId));
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('api_keys').set({ revoked_at: Date.now() }).where('id', '=', row!.id)));
    expect((await call(ctx, { method: 'GET', url: '/api/v1/events', headers: t.auth })).status).toBe(403);
  });

  it("never shows another account's entries: not in the list, not by its key, not through a cursor", async () => {
    const mine = await createTenant(ctx);
    const theirs = await createTenant(ctx);
    const theirLicense = await createLicense(ctx, theirs, (await createProduct(ctx, theirs)).id);
    for (let i = 0; i < 3; i++) await createLicense(ctx, mine, (await createProduct(ctx, mine)).id);
    const all = await call(ctx, { method: 'GET', url: '/api/v1/events', headers: mine.auth });
    expect(all.body.data).toHaveLength(3);
    expect(JSON.stringify(all.body)).not.toContain(theirLicense.key);
    const byKey = await call(ctx, { method: 'GET', url: `/api/v1/events?licenseKey=${theirLicense.key}`, headers: mine.auth });
    expect(byKey.status).toBe(200);
    expect(byKey.body.data).toEqual([]);
    // Their cursor in my list: a position in time, it still shows only mine.
    const theirPage = await call(ctx, { method: 'GET', url: '/api/v1/events?limit=1', headers: theirs.auth });
    expect(theirPage.body.data).toHaveLength(1);
    const mineFromThere = await call(ctx, { method: 'GET', url: `/api/v1/events?cursor=${Buffer.from('zzzzzzzzzzzzz00000000').toString('base64url')}`, headers: mine.auth });
    expect(mineFromThere.body.data.every((e: { licenseKey: string }) => e.licenseKey !== theirLicense.key)).toBe(true);
  });
});

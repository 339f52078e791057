import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('Idempotency-Key under concurrency', (kind) => {
  const ctx = useTestApp(kind);

  it('10 concurrent requests with one key create exactly one license; the others replay it or are told it is in use', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': 'burst' };
    const results = await Promise.all(Array.from({ length: 10 }, () => call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } })));
    const created = results.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
    expect(created).toHaveLength(1);
    for (const r of results) {
      if (r.status === 200) expect(r.body.key).toBe(created[0]!.body.key);
      else expect(r.body.error.code).toBe('idempotency_key_in_use');
    }
    const stored = await ctx.store.read.all(ctx.store.db.selectFrom('licenses').select('key').where('account_id', '=', t.accountId));
    expect(stored).toEqual([{ key: created[0]!.body.key }]);
    const after = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } });
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(after.body.key).toBe(created[0]!.body.key);
  });
});

import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('Idempotency-Key errors', (kind) => {
  const ctx = useTestApp(kind);
  const licensesOf = (accountId: string) => ctx.store.read.all(ctx.store.db.selectFrom('licenses').select('key').where('account_id', '=', accountId));

  it('the same key with another body is 422 idempotency_key_reused, and nothing is created', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': randomUUID() };
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } })).status).toBe(200);
    const other = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 2 } });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    // Another endpoint with the same key is another request too.
    const otherPath = await call(ctx, { method: 'POST', url: '/api/v1/products', headers, json: { name: 'Other' } });
    expect(otherPath.body.error?.code).toBe('idempotency_key_reused');
    expect(await licensesOf(t.accountId)).toHaveLength(1);
  });

  it('the same key with another License-Key is another request: 422, and the second license is not touched', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const [a, b] = [await createLicense(ctx, t, p.id), await createLicense(ctx, t, p.id)];
    const headers = { ...t.auth, 'idempotency-key': randomUUID() };
    const first = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...headers, 'license-key': a.key }, json: { revoked: true } });
    expect(first.status).toBe(200);
    expect(first.body.key).toBe(a.key);
    // The same key and body on license b: not a replay of a's answer.
    const other = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...headers, 'license-key': b.key }, json: { revoked: true } });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': b.key } })).body.revoked).toBe(false);
    // The key as clients may send it (trimmed, upper-cased for lookup) is the same license: a replay.
    const again = await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...headers, 'license-key': ` ${a.key.toLowerCase()} ` }, json: { revoked: true } });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('a key still being worked on is 409 idempotency_key_in_use', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': 'slow' };
    const create = ctx.services.licenses.create;
    let release!: () => void;
    let entered!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const inside = new Promise<void>((r) => (entered = r));
    ctx.services.licenses.create = async (...args) => {
      entered();
      await held;
      return create.apply(ctx.services.licenses, args);
    };
    try {
      const first = call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } });
      await inside;
      const second = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } });
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('idempotency_key_in_use');
      release();
      expect((await first).status).toBe(200);
    } finally {
      ctx.services.licenses.create = create;
    }
    expect(await licensesOf(t.accountId)).toHaveLength(1);
  });

  it('refuses an empty or over-long key with a 400 and stores nothing', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    for (const key of ['', 'k'.repeat(256)]) {
      const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: { ...t.auth, 'idempotency-key': key }, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.issues).toEqual([{ path: 'headers.idempotency-key', message: 'must be 1 to 255 characters' }]);
    }
    const ok = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: { ...t.auth, 'idempotency-key': 'k'.repeat(255) }, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } });
    expect(ok.status).toBe(200);
    expect(await licensesOf(t.accountId)).toHaveLength(1);
  });

  it('a request refused by validation stores no answer: the corrected request with the same key runs', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': 'fix-me' };
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 'x' } })).status).toBe(400);
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } })).status).toBe(200);
  });

  /** Makes storing an answer on its own (after the change's unit) fail, as a full disk would. */
  async function withAnswersUnstorable<T>(fn: () => Promise<T>): Promise<{ result: T; saves: number }> {
    const repo = (ctx.services.idempotency as unknown as { repo: { save: () => Promise<void> } }).repo;
    const save = repo.save;
    let saves = 0;
    repo.save = async () => {
      saves++;
      throw new Error('disk full');
    };
    try {
      return { result: await fn(), saves };
    } finally {
      repo.save = save;
    }
  }

  it('records the key in the change\'s own unit: when its answer cannot be stored, a retry is 409 and never runs again', async () => {
    const t = await createTenant(ctx);
    const headers = { ...t.auth, 'idempotency-key': 'answer-lost' };
    const json = { name: 'Once' };
    const { result, saves } = await withAnswersUnstorable(() => call(ctx, { method: 'POST', url: '/api/v1/products', headers, json }));
    expect(result.status).toBe(200);
    expect(saves).toBe(1);
    const retry = await call(ctx, { method: 'POST', url: '/api/v1/products', headers, json });
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('idempotency_key_in_use');
    const products = await ctx.store.read.all(ctx.store.db.selectFrom('products').select('id').where('account_id', '=', t.accountId));
    expect(products).toHaveLength(1);
  });

  it('a license creation records its answer in its own unit: nothing is stored after it, and a retry replays it', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': 'answer-in-unit' };
    const json = { productId: p.id, type: 'perpetual', maxDevices: 1 };
    const { result: first, saves } = await withAnswersUnstorable(() => call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json }));
    expect(first.status).toBe(200);
    expect(saves).toBe(0);
    const retry = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.raw.body).toBe(first.raw.body);
    expect(await licensesOf(t.accountId)).toHaveLength(1);
  });

  it('a creation refused inside its unit (404) records nothing there: its answer is stored on its own and replayed', async () => {
    const t = await createTenant(ctx);
    const headers = { ...t.auth, 'idempotency-key': 'refused-in-unit' };
    const json = { productId: 'prod_missing', type: 'perpetual', maxDevices: 1 };
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json })).status).toBe(404);
    const [row] = await ctx.store.read.all(ctx.store.db.selectFrom('idempotency_keys').select(['response_status']).where('account_id', '=', t.accountId));
    expect(row).toEqual({ response_status: 404 });
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json })).headers['idempotent-replayed']).toBe('true');
  });
});


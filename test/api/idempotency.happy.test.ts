import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { SecretBox } from '../../src/core/secret-box.ts';
import { inviteToFirstUnit } from '../../src/core/unit-of-work.ts';
import { IdempotencyService } from '../../src/modules/idempotency/service.ts';
import { idempotencyRepository } from '../../src/modules/idempotency/repository.ts';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('Idempotency-Key', (kind) => {
  const ctx = useTestApp(kind);
  const licensesOf = (accountId: string) => ctx.store.read.all(ctx.store.db.selectFrom('licenses').select('key').where('account_id', '=', accountId));

  it('is named in the OpenAPI document on every server-API POST, PUT and PATCH, and nowhere else', async () => {
    const doc = (await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' })).body as { paths: Record<string, Record<string, { security?: object[]; parameters?: { name: string }[] }>> };
    const takes: string[] = [];
    const should: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if ((operation.parameters ?? []).some((p) => p.name === 'Idempotency-Key')) takes.push(`${method} ${path}`);
        if (['post', 'put', 'patch'].includes(method) && (operation.security ?? []).length > 0) should.push(`${method} ${path}`);
      }
    }
    expect(takes).toContain('post /api/v1/licenses');
    expect(takes).not.toContain('post /api/v1/public/licenses/activate');
    expect(takes.sort()).toEqual(should.sort());
  });

  it('replays the first answer of a license creation (same status, body, type) and creates nothing again', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': randomUUID() };
    const first = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 3 } });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // Committed before it was sent (not only queued): a process killed now would still replay it.
    // Stored as sent: a license's answer holds no secret that its own row does not (answers that
    // do are sealed: idempotency.security.test.ts).
    const stored = await ctx.store.read.first(ctx.store.db.selectFrom('idempotency_keys').select('response_body').where('idem_key', '=', headers['idempotency-key']));
    expect(stored?.response_body).toBe(first.raw.body);
    const again = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 3 } });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.raw.body).toBe(first.raw.body);
    expect(await licensesOf(t.accountId)).toEqual([{ key: first.body.key }]);
  });

  it('takes the same fields in another order, or spaced otherwise, as the same request', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': randomUUID(), 'content-type': 'application/json' };
    const first = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, payload: `{"productId":"${p.id}","type":"perpetual","maxDevices":3,"email":"a@example.com"}` });
    expect(first.status).toBe(200);
    const reordered = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, payload: `{ "email": "a@example.com", "maxDevices": 3,\n "type": "perpetual", "productId": "${p.id}" }` });
    expect(reordered.status).toBe(200);
    expect(reordered.headers['idempotent-replayed']).toBe('true');
    expect(reordered.raw.body).toBe(first.raw.body);
    // Another value is still another request.
    const changed = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, payload: `{"maxDevices":4,"type":"perpetual","productId":"${p.id}","email":"a@example.com"}` });
    expect(changed.status).toBe(422);
    expect(changed.body.error.code).toBe('idempotency_key_reused');
    expect(await licensesOf(t.accountId)).toEqual([{ key: first.body.key }]);
  });

  it('replays a 4xx answer too (the request ran and was refused)', async () => {
    const t = await createTenant(ctx);
    const headers = { ...t.auth, 'idempotency-key': 'k-404' };
    const json = { productId: 'prod_missing', type: 'perpetual', maxDevices: 1 };
    const first = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json });
    expect(first.status).toBe(404);
    const again = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json });
    expect(again.status).toBe(404);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('keys are per account: another account with the same key runs its own request', async () => {
    const [a, b] = [await createTenant(ctx), await createTenant(ctx)];
    const [pa, pb] = [await createProduct(ctx, a), await createProduct(ctx, b)];
    const key = { 'idempotency-key': 'shared-key' };
    const ra = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: { ...a.auth, ...key }, json: { productId: pa.id, type: 'perpetual', maxDevices: 1 } });
    const rb = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: { ...b.auth, ...key }, json: { productId: pb.id, type: 'perpetual', maxDevices: 1 } });
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect(rb.headers['idempotent-replayed']).toBeUndefined();
    expect(rb.body.key).not.toBe(ra.body.key);
  });

  it('covers PUT and PATCH, and requests without a key are not affected', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const patch = (name: string) =>
      call(ctx, { method: 'PATCH', url: `/api/v1/products/${p.id}`, headers: { ...t.auth, 'idempotency-key': 'rename' }, json: { name } });
    expect((await patch('Renamed')).body.name).toBe('Renamed');
    expect((await patch('Renamed')).headers['idempotent-replayed']).toBe('true');
    const noKey = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: t.auth, json: { name: 'x' } });
    const noKey2 = await call(ctx, { method: 'POST', url: '/api/v1/products', headers: t.auth, json: { name: 'x' } });
    expect(noKey2.body.id).not.toBe(noKey.body.id);
  });

  it('releases the key when the request fails with a 5xx, so the retry runs', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': 'retry-after-500' };
    const create = ctx.services.licenses.create;
    ctx.services.licenses.create = async () => {
      throw new Error('store went away');
    };
    try {
      expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } })).status).toBe(500);
    } finally {
      ctx.services.licenses.create = create;
    }
    const retry = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json: { productId: p.id, type: 'perpetual', maxDevices: 1 } });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await licensesOf(t.accountId)).toHaveLength(1);
  });

  it('keeps the key of a change that committed before a 5xx: the retry replays the 5xx and creates nothing again', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const headers = { ...t.auth, 'idempotency-key': 'failed-after-commit' };
    const json = { productId: p.id, type: 'perpetual', maxDevices: 1 };
    const create = ctx.services.licenses.create;
    ctx.services.licenses.create = async (...args) => {
      await create.apply(ctx.services.licenses, args);
      throw new Error('failed after the commit');
    };
    try {
      expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json })).status).toBe(500);
    } finally {
      ctx.services.licenses.create = create;
    }
    expect(await licensesOf(t.accountId)).toHaveLength(1);
    const retry = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers, json });
    expect(retry.status).toBe(500);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await licensesOf(t.accountId)).toHaveLength(1);
  });

  it('expires keys after 24 hours (a later request runs anew) and purges them', async () => {
    const t = await createTenant(ctx);
    let now = 1_800_000_000_000;
    const service = new IdempotencyService(idempotencyRepository(ctx.store), (w) => ctx.store.write(w), () => now, new SecretBox(ctx.config.secretKey, 'idempotent-answers'));
    const first = await service.claim(t.accountId, 'k', 'h1');
    expect(first.outcome).toBe('claimed');
    expect(await service.claim(t.accountId, 'k', 'h1')).toEqual({ outcome: 'in_use' });
    if (first.outcome === 'claimed') await first.hold.complete({ status: 200, contentType: 'application/json', body: '{}' });
    expect(await service.claim(t.accountId, 'k', 'h1')).toEqual({ outcome: 'replay', response: { status: 200, contentType: 'application/json', body: '{}' } });
    now += 24 * 60 * 60_000 - 1;
    expect(await service.claim(t.accountId, 'k', 'h2')).toEqual({ outcome: 'reused' });
    now += 1;
    expect((await service.claim(t.accountId, 'k', 'h2')).outcome).toBe('claimed');
    const other = await service.claim(t.accountId, 'other', 'h');
    if (other.outcome === 'claimed') await other.hold.complete({ status: 200, contentType: null, body: '' });
    now += 24 * 60 * 60_000;
    // Other suites' keys (real clock) expire too at this time: at least this account's two go.
    expect(await service.purgeExpired()).toBeGreaterThanOrEqual(2);
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', t.accountId))).toEqual([]);
  });

  it('an answer rendered from the unit is recorded with the change; an answer sent otherwise, or not renderable, is stored after it', async () => {
    const t = await createTenant(ctx);
    const now = 1_800_000_000_000;
    const process = () => new IdempotencyService(idempotencyRepository(ctx.store), (w) => ctx.store.write(w), () => now, new SecretBox(ctx.config.secretKey, 'idempotent-answers'));
    const json = (status: number, body: string) => ({ status, contentType: 'application/json', body });
    const run = async (key: string, render: (value: unknown) => ReturnType<typeof json>, sent: ReturnType<typeof json>) => {
      const claim = await process().claim(t.accountId, key, 'h');
      if (claim.outcome !== 'claimed') throw new Error('not claimed');
      claim.hold.answerFrom(render);
      await inviteToFirstUnit(claim.hold, () => ctx.services.units.run(async () => ({ made: key })));
      const before = await process().claim(t.accountId, key, 'h');
      await claim.hold.complete(sent);
      return { before, after: await process().claim(t.accountId, key, 'h') };
    };
    const rendered = (value: unknown) => json(200, JSON.stringify(value));

    // Committed with the change: another process replays it before the request has even answered.
    const same = await run('same', rendered, json(200, '{"made":"same"}'));
    expect(same.before).toEqual({ outcome: 'replay', response: json(200, '{"made":"same"}') });
    expect(same.after).toEqual(same.before);

    // The route sent something else after all: what it sent is what a retry gets.
    const other = await run('other', rendered, json(201, '{"other":true}'));
    expect(other.after).toEqual({ outcome: 'replay', response: json(201, '{"other":true}') });

    // Not renderable inside the unit: the key alone is recorded there (a retry meanwhile waits), the answer after.
    const broken = await run('broken', () => { throw new Error('no view'); }, json(200, '{"late":1}'));
    expect(broken.before).toEqual({ outcome: 'in_use' });
    expect(broken.after).toEqual({ outcome: 'replay', response: json(200, '{"late":1}') });
  });

  it('a claim whose process died is taken over after its lease, unless its change was recorded: that one never runs again', async () => {
    const t = await createTenant(ctx);
    let now = 1_800_000_000_000;
    // A service per "process": a new one knows nothing of the claims the dead one held in memory.
    const process = () => new IdempotencyService(idempotencyRepository(ctx.store), (w) => ctx.store.write(w), () => now, new SecretBox(ctx.config.secretKey, 'idempotent-answers'));
    const dead = await process().claim(t.accountId, 'not-run', 'h');
    expect(dead.outcome).toBe('claimed');
    const ran = await process().claim(t.accountId, 'ran', 'h');
    if (ran.outcome !== 'claimed') throw new Error('not claimed');
    // Its change committed with the key recorded in the same unit; the process died before the answer.
    await ctx.services.units.run(async (unit) => ran.hold.enter(unit));
    now += 5 * 60_000;
    const after = process();
    expect((await after.claim(t.accountId, 'not-run', 'h')).outcome).toBe('claimed');
    expect(await after.claim(t.accountId, 'ran', 'h')).toEqual({ outcome: 'in_use' });
    now += 24 * 60 * 60_000;
    expect((await after.claim(t.accountId, 'ran', 'h')).outcome).toBe('claimed');
  });
});

import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { call, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('Idempotency-Key: stored answers that hold a secret', (kind) => {
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const storedBody = async (accountId: string, key: string) =>
    (await ctx.store.read.first(ctx.store.db.selectFrom('idempotency_keys').select('response_body').where('account_id', '=', accountId).where('idem_key', '=', key)))?.response_body;
  const create = (auth: Record<string, string>, key: string) =>
    call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: { ...auth, 'idempotency-key': key }, json: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });

  it('keeps a webhook endpoint answer (its signing secret) encrypted at rest, and replays it exactly', async () => {
    const t = await createTenant(ctx);
    const key = randomUUID();
    const first = await create(t.auth, key);
    expect(first.status).toBe(200);
    const { secret } = first.body as { secret: string };
    const stored = await storedBody(t.accountId, key);
    expect(stored).toMatch(/^v1\./);
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(secret.slice('whsec_'.length));

    const again = await create(t.auth, key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.raw.body).toBe(first.raw.body);
    const endpoints = (await call(ctx, { method: 'GET', url: '/api/v1/webhooks', headers: t.auth })).body as { data: unknown[] };
    expect(endpoints.data).toHaveLength(1);
  });

  it('a sealed answer opens only for its own account and key: copied onto another key it is not replayed', async () => {
    const t = await createTenant(ctx);
    const [key, other] = [randomUUID(), randomUUID()];
    await create(t.auth, key);
    await create(t.auth, other);
    const sealed = await storedBody(t.accountId, key);
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('idempotency_keys').set({ response_body: sealed! }).where('account_id', '=', t.accountId).where('idem_key', '=', other)));
    const replay = await create(t.auth, other);
    expect(replay.status).toBe(500);
    expect(JSON.stringify(replay.body)).not.toMatch(/whsec_/);
  });

  it('still replays an answer stored as sent (before answers were sealed)', async () => {
    const t = await createTenant(ctx);
    const key = randomUUID();
    const first = await create(t.auth, key);
    await ctx.store.write((tx) => tx.run(ctx.store.db.updateTable('idempotency_keys').set({ response_body: first.raw.body }).where('account_id', '=', t.accountId).where('idem_key', '=', key)));
    const again = await create(t.auth, key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.raw.body).toBe(first.raw.body);
  });

  it('every server-API answer with a secret in its schema is one the routes mark as holding a secret (webhook creation only)', async () => {
    type Schema = { $ref?: string; properties?: Record<string, unknown> };
    type Operation = { responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> };
    const doc = (await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' })).body as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };
    // Named answers are components (src/http/openapi.ts).
    const resolved = (s: Schema | undefined) => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s);
    const withSecret: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const schemas = Object.values(operation.responses ?? {}).flatMap((r) => Object.values(r.content ?? {}).map((c) => resolved(c.schema)));
        if (schemas.some((s) => s?.properties !== undefined && 'secret' in s.properties)) withSecret.push(`${method} ${path}`);
      }
    }
    // A new answer with a secret: mark its route `config: { answerHoldsSecret: true }`, then add it here.
    expect(withSecret).toEqual(['post /api/v1/webhooks']);
  });
});

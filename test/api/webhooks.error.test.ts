import { beforeAll, expect, it } from 'vitest';
import { call, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('webhooks API (errors)', (kind) => {
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(ctx);
  });
  const count = async () => Number((await ctx.store.read.first(ctx.store.db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n'))))!.n);

  it.each([
    ['no url', { events: ['*'] }, 'url'],
    ['no events', { url: 'http://127.0.0.1:9/hook' }, 'events'],
    ['empty events', { url: 'http://127.0.0.1:9/hook', events: [] }, 'events'],
    ['an unknown event', { url: 'http://127.0.0.1:9/hook', events: ['license.exploded'] }, 'events'],
    ['a relative url', { url: '/hook', events: ['*'] }, 'url'],
    ['an ftp url', { url: 'ftp://example.com/hook', events: ['*'] }, 'url'],
    ['a javascript url', { url: 'javascript:alert(1)', events: ['*'] }, 'url'],
    ['credentials in the url', { url: 'http://user:pw@127.0.0.1:9/hook', events: ['*'] }, 'url'],
    ['a too long description', { url: 'http://127.0.0.1:9/hook', events: ['*'], description: 'x'.repeat(501) }, 'description'],
    ['a host that does not resolve', { url: 'http://no-such-host.invalid/hook', events: ['*'] }, 'url'],
  ])('refuses %s with a 400 and stores nothing', async (_name, json, path) => {
    const before = await count();
    const res = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: tenant.auth, json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(res.body.error.issues ?? [])).toContain(path);
    expect(await count()).toBe(before);
  });

  it('refuses a PATCH with bad fields and leaves the endpoint as it was', async () => {
    const created = (await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: tenant.auth, json: { url: 'http://127.0.0.1:9/hook', events: ['*'] } })).body;
    for (const json of [{ url: 'gopher://x' }, { events: [] }, { enabled: 'yes' }, { description: 5 }]) {
      const res = await call(ctx, { method: 'PATCH', url: `/api/v1/webhooks/${created.id}`, headers: tenant.auth, json });
      expect(res.status).toBe(400);
    }
    const after = (await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${created.id}`, headers: tenant.auth })).body;
    expect(after).toMatchObject({ url: 'http://127.0.0.1:9/hook', events: ['*'], enabled: true });
  });

  it('answers 404 for unknown endpoints and deliveries, 400 for bad paging', async () => {
    const created = (await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: tenant.auth, json: { url: 'http://127.0.0.1:9/hook', events: ['*'] } })).body;
    for (const [method, url] of [
      ['GET', '/api/v1/webhooks/we_missing'],
      ['PATCH', '/api/v1/webhooks/we_missing'],
      ['DELETE', '/api/v1/webhooks/we_missing'],
      ['GET', '/api/v1/webhooks/we_missing/deliveries'],
      ['POST', `/api/v1/webhooks/${created.id}/deliveries/wd_missing/redeliver`],
    ] as const) {
      const res = await call(ctx, { method, url, headers: tenant.auth, ...(method === 'PATCH' ? { json: { enabled: true } } : {}) });
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'cursor=not-a-cursor']) {
      const res = await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${created.id}/deliveries?${query}`, headers: tenant.auth });
      expect(res.status, query).toBe(400);
    }
  });

  it('requires an API key', async () => {
    expect((await call(ctx, { method: 'GET', url: '/api/v1/webhooks' })).status).toBe(401);
    expect((await call(ctx, { method: 'POST', url: '/api/v1/webhooks', json: { url: 'http://127.0.0.1:9/', events: ['*'] } })).status).toBe(401);
  });

  it('caps the endpoints of an account', async () => {
    const other = await createTenant(ctx);
    for (let i = 0; i < 20; i++) {
      expect((await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: other.auth, json: { url: `http://127.0.0.1:9/h${i}`, events: ['*'] } })).status).toBe(200);
    }
    const res = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: other.auth, json: { url: 'http://127.0.0.1:9/h20', events: ['*'] } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].message).toMatch(/at most 20/);
  });

  it('holds the cap when creations race: 30 at once make 20 endpoints', async () => {
    const racer = await createTenant(ctx);
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: racer.auth, json: { url: `http://127.0.0.1:9/r${i}`, events: ['*'] } })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(20);
    expect(answers.filter((a) => a.status === 400)).toHaveLength(10);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/webhooks', headers: racer.auth })).body.data).toHaveLength(20);
  });
});

import { expect, it } from 'vitest';
import { call, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('account events (errors)', (kind) => {
  const ctx = useTestApp(kind);

  it('answers 400 invalid_request naming the parameter for a bad type, limit, cursor or key', async () => {
    const t = await createTenant(ctx);
    for (const [query, path] of [
      ['type=license.exploded', 'query.type'],
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['limit=ten', 'query.limit'],
      ['cursor=not-a-cursor', 'query.cursor'],
      [`cursor=${'x'.repeat(600)}`, 'query.cursor'],
      [`licenseKey=${'K'.repeat(65)}`, 'query.licenseKey'],
      ['licenseKey=', 'query.licenseKey'],
    ] as const) {
      const res = await call(ctx, { method: 'GET', url: `/api/v1/events?${query}`, headers: t.auth });
      expect(res.status, query).toBe(400);
      expect(res.body.error.code, query).toBe('invalid_request');
      expect(res.body.error.issues.map((i: { path: string }) => i.path), query).toContain(path);
    }
  });

  it('accepts a JSON content type on the GET with no body', async () => {
    const t = await createTenant(ctx);
    const res = await call(ctx, { method: 'GET', url: '/api/v1/events', headers: { ...t.auth, 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], nextCursor: null });
  });
});

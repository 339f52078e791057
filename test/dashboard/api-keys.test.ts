import { expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { call, createTenant, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('dashboard API keys: scope and expiry', (kind) => {
  const ctx = useTestApp(kind);

  it('creates a read-only key with an expiry: shown once, listed with its scope and date, refused on writes', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const form = await browser.request('GET', '/dashboard/api-keys');
    expect(form.body).toContain('<select id="f-scope" name="scope"');
    const res = await browser.request('POST', '/dashboard/api-keys', { name: 'Reports', scope: 'read', expiresAt: '2999-01-31', csrf: browser.csrf });
    expect(res.status).toBe(200);
    const secret = /id="new-api-key"[^>]*>(sk_[A-Za-z0-9]+)</.exec(res.body)![1]!;
    const row = /<tr><td>Reports<\/td>[\s\S]*?<\/tr>/.exec(res.body)![0];
    expect(textOf(row)).toMatch(/Read only .*2999/);
    const auth = { authorization: `Bearer ${secret}` };
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: auth })).status).toBe(200);
    expect(await call(ctx, { method: 'POST', url: '/api/v1/products', headers: auth, json: { name: 'x' } })).toMatchObject({ status: 403, body: { error: { code: 'insufficient_scope' } } });
    const stored = (await ctx.services.apiKeys.list(cliPrincipal(t.accountId))).find((k) => k.name === 'Reports');
    expect(stored).toMatchObject({ scope: 'read', expiresAt: Date.UTC(2999, 0, 31) });
  });

  it.each([
    ['an unknown scope', { scope: 'admin' }, 'f-scope-error'],
    ['an expiry that is not a date', { expiresAt: 'soon' }, 'f-expiresAt-error'],
    ['an expiry in the past', { expiresAt: '2001-01-01' }, 'f-expiresAt-error'],
  ])('refuses %s with the field marked, and creates no key', async (_label, fields, errorId) => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', '/dashboard/api-keys');
    const res = await browser.request('POST', '/dashboard/api-keys', { name: 'Bad', scope: 'full', ...fields, csrf: browser.csrf });
    expect(res.status).toBe(400);
    expect(res.body).toContain(`id="${errorId}"`);
    expect(res.body).not.toContain('new-api-key');
    expect((await ctx.services.apiKeys.list(cliPrincipal(t.accountId))).map((k) => k.name)).toEqual(['test']);
  });
});

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens } from '../support/license-tokens.ts';

/**
 * docs/migrating.md's fetch override, run as printed: the block is taken from the page, so the
 * page cannot drift from what is tested. The hosted client SDK is not on the npm registry, so its
 * requests are made here as it makes them (its URLs, its User-Agent, a Request object or a string).
 */
const ctx = useTestApp('sqlite');
const cache = resolve('node_modules/.cache');
mkdirSync(cache, { recursive: true });
const work = mkdtempSync(join(cache, 'tessera-migrating-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function snippet(): string {
  const doc = readFileSync(resolve('docs/migrating.md'), 'utf8');
  const match = /```ts\n(\/\/ redirect-fetch\.ts[\s\S]*?)```/.exec(doc);
  if (!match) throw new Error('docs/migrating.md has no redirect-fetch.ts block');
  return match[1]!;
}

it("the migration guide's fetch override sends the hosted client SDK's calls to this server and leaves other requests alone", async () => {
  writeFileSync(join(work, 'redirect-fetch.ts'), snippet());
  const { redirectFetch } = (await import(join(work, 'redirect-fetch.ts'))) as { redirectFetch: (url: string, inner?: typeof fetch) => typeof fetch };
  const t = await createTenant(ctx);
  const p = await createProduct(ctx, t);
  await configureTokens(ctx, t, p.id);
  const l = await createLicense(ctx, t, p.id);
  const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });

  const seen: string[] = [];
  const inner: typeof fetch = (input, init) => {
    seen.push(input instanceof Request ? input.url : String(input));
    return input instanceof Request && String(input.url).startsWith('https://elsewhere.test/') ? Promise.resolve(new Response('untouched')) : fetch(input, init);
  };
  const sdkFetch = redirectFetch(`${address}/`, inner);
  const headers = { 'Content-Type': 'application/json', 'User-Agent': 'keyforge-node-client:1.0.0' };
  const query = { licenseKey: l.key, deviceIdentifier: 'dev-1', productId: p.id };
  const post = (path: string, body: unknown) => sdkFetch(`https://keyforge.dev/api/v1/public/licenses/${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

  const activation = await post('activate', { ...query, deviceName: 'Laptop' });
  expect(activation.status).toBe(200);
  expect(await activation.json()).toMatchObject({ isValid: true, status: 'active', token: expect.any(String) });
  const validation = await sdkFetch(new Request('https://keyforge.dev/api/v1/public/licenses/validate', { method: 'POST', headers, body: JSON.stringify(query) }));
  expect(await validation.json()).toMatchObject({ isValid: true, status: 'active' });
  const refresh = await post('token', query);
  expect(await refresh.json()).toMatchObject({ isValid: true, status: 'active', token: expect.any(String) });
  const unknownKey = await post('activate', { ...query, licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', deviceName: 'x' });
  expect(await unknownKey.json()).toMatchObject({ error: { code: 'invalid_license' } });

  expect(await (await sdkFetch(new Request('https://elsewhere.test/api/v1/public/licenses/validate'))).text()).toBe('untouched');
  expect(seen).toEqual([
    `${address}/api/v1/public/licenses/activate`,
    `${address}/api/v1/public/licenses/validate`,
    `${address}/api/v1/public/licenses/token`,
    `${address}/api/v1/public/licenses/activate`,
    'https://elsewhere.test/api/v1/public/licenses/validate',
  ]);

  // Installed globally, as the guide says: the SDK's own fetch calls go to this server.
  const original = globalThis.fetch;
  globalThis.fetch = redirectFetch(address);
  try {
    const res = await fetch('https://keyforge.dev/api/v1/public/licenses/validate', { method: 'POST', headers, body: JSON.stringify(query) });
    expect(await res.json()).toMatchObject({ isValid: true });
  } finally {
    globalThis.fetch = original;
  }
});

import { Writable } from 'node:stream';
import vm from 'node:vm';
import { expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('wire format quirks of the SDKs in the field', (kind) => {
  const ctx = useTestApp(kind);

  it('accepts Content-Type: application/json with no body on GET, DELETE and body-less POSTs', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const headers = { ...t.auth, 'license-key': l.key, 'content-type': 'application/json' };
    for (const [method, url] of [
      ['GET', '/api/v1/products'],
      ['GET', `/api/v1/products/${p.id}`],
      ['GET', '/api/v1/licenses'],
      ['POST', '/api/v1/licenses/validate'],
      ['POST', '/api/v1/licenses/devices/reset'],
      ['POST', '/api/v1/licenses/devices/x/remove'],
      ['DELETE', '/api/v1/licenses'],
    ] as const) {
      const res = await ctx.app.inject({ method, url, headers, payload: '' });
      expect(res.statusCode, `${method} ${url}`).toBe(200);
    }
  });

  it('accepts {} and no body at all on body-less POSTs', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const headers = { ...t.auth, 'license-key': l.key };
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/licenses/devices/reset', headers })).statusCode).toBe(200);
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses/validate', headers, json: {} })).status).toBe(200);
  });

  it('answers JSON with charset utf-8', async () => {
    const t = await createTenant(ctx);
    const res = await call(ctx, { method: 'GET', url: '/api/v1/products', headers: t.auth });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const err = await call(ctx, { method: 'GET', url: '/api/v1/products' });
    expect(err.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  // Raw text, not a JS object literal: `{ __proto__: ... }` in a literal sets the prototype and
  // JSON.stringify drops it, so such a test would never send the attack at all.
  const poisoned = [
    '{"name":"Poisoned","__proto__":{"polluted":true}}',
    '{"name":"Poisoned","constructor":{"prototype":{"polluted":true}}}',
    '{"name":"Poisoned","nested":{"__proto__":{"polluted":true}}}',
  ];

  it('the poisoned bodies would pollute Object.prototype if parsed and merged naively', () => {
    // The payloads are real: in a fresh realm (so this process stays clean), JSON.parse plus the
    // textbook recursive merge pollutes every object. The API must never get that far.
    const realm = vm.createContext({ bodies: poisoned });
    const polluted = vm.runInContext(
      `const merge = (target, source) => {
         for (const key of Object.keys(source)) {
           if (source[key] && typeof source[key] === 'object') merge(target[key] ??= {}, source[key]);
           else target[key] = source[key];
         }
         return target;
       };
       bodies.map((body) => { merge({}, JSON.parse(body)); const hit = ({}).polluted === true; delete Object.prototype.polluted; return hit; });`,
      realm,
    );
    expect(polluted).toEqual([true, true, true]);
  });

  it.each(poisoned)('refuses the poisoned body %s: a 400, nothing stored, Object.prototype clean', async (payload) => {
    const t = await createTenant(ctx);
    for (const url of ['/api/v1/products', '/api/v1/public/licenses/validate']) {
      const res = await ctx.app.inject({ method: 'POST', url, headers: { ...t.auth, 'content-type': 'application/json' }, payload });
      expect(res.statusCode, url).toBe(400);
      expect(JSON.parse(res.body), url).toEqual({ error: { code: 'invalid_request', message: 'The request body is not valid JSON.' } });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    // Nothing was created from the body: the tenant still has no product, and no row anywhere has the name.
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: t.auth })).body).toEqual([]);
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('products').select('id').where('name', '=', 'Poisoned'))).toEqual([]);
  });
});

forEachStore('rate limits', (kind) => {
  const ctx = useTestApp(kind, { env: { RATE_LIMIT: 'on', RATE_LIMIT_PUBLIC_PER_MINUTE: '3', RATE_LIMIT_SERVER_PER_MINUTE: '4' } });

  it('limits public endpoints per client with 429, rate_limited and Retry-After', async () => {
    const json = { licenseKey: 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ', deviceIdentifier: 'd', productId: 'p' };
    const statuses = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.body.error.code).toBe('rate_limited');
    // Seconds until the one-minute window (which began with this test's first request) ends.
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(50);
    expect(Number(last!.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('limits the server API per account, not per address', async () => {
    const a = await createTenant(ctx);
    const b = await createTenant(ctx);
    const statuses = [];
    let last;
    for (let i = 0; i < 5; i++) {
      last = await call(ctx, { method: 'GET', url: '/api/v1/products', headers: a.auth });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(last!.body.error.code).toBe('rate_limited');
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(50);
    expect([last!.headers['ratelimit-limit'], last!.headers['ratelimit-remaining']]).toEqual(['4', '0']);
    expect(Number(last!.headers['ratelimit-reset'])).toBe(Number(last!.headers['retry-after']));
    expect((await call(ctx, { method: 'GET', url: '/api/v1/products', headers: b.auth })).status).toBe(200);
  });
});

forEachStore('RATE_LIMIT=off', (kind) => {
  // The same tiny limits as above, turned off by the one switch.
  const ctx = useTestApp(kind, { env: { RATE_LIMIT: 'off', RATE_LIMIT_PUBLIC_PER_MINUTE: '1', RATE_LIMIT_SERVER_PER_MINUTE: '1', RATE_LIMIT_DASHBOARD_PER_MINUTE: '1' } });

  it('turns every limit off: public, server API and pages answer past their sizes, without limit headers', async () => {
    const t = await createTenant(ctx);
    const json = { licenseKey: 'ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ', deviceIdentifier: 'd', productId: 'p' };
    for (let i = 0; i < 5; i++) {
      const pub = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json });
      const server = await call(ctx, { method: 'GET', url: '/api/v1/products', headers: t.auth });
      const page = await ctx.app.inject({ method: 'GET', url: '/dashboard/login' });
      expect([pub.status, server.status, page.statusCode]).toEqual([200, 200, 200]);
      expect(pub.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

forEachStore('errors and logs reveal nothing internal', (kind) => {
  const ctx = useTestApp(kind);

  it('answers an unexpected failure with internal_error, no stack and no SQL', async () => {
    const services = { ...ctx.services, licenses: Object.create(ctx.services.licenses) };
    services.licenses.publicValidate = async () => {
      throw new Error('SQLITE_ERROR near "SELECT password_hash FROM accounts"');
    };
    const app = await buildApp({ config: ctx.config, services, logger: false });
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/public/licenses/validate',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ licenseKey: 'K', deviceIdentifier: 'd', productId: 'p' }),
    });
    await app.close();
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'internal_error', message: 'Internal server error.' } });
  });

  it('request logs never contain API keys or license keys', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk, _enc, cb) => void (lines.push(chunk.toString()), cb()) });
    const app = await buildApp({ config: { ...ctx.config, logLevel: 'trace' }, services: ctx.services, logStream: stream });
    await app.inject({ method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } });
    await app.inject({ method: 'POST', url: '/api/v1/licenses', headers: { ...t.auth, 'content-type': 'application/json' }, payload: '{"bad":' });
    await app.close();
    const log = lines.join('');
    expect(log).toContain('"msg":"request"');
    expect(log).not.toContain(t.apiKey);
    expect(log).not.toContain(l.key);
  });
});

import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { type AccessLine, loggerOptions, RequestLogger, redactUrl, writeInfoLine } from '../../src/http/access-log.ts';
import { call, createLicense, createProduct, createTenant, type TestContext, useTestApp } from '../support/app.ts';

type Line = Record<string, unknown> & { msg: string; level: number };

/** An app on the suite's store whose log lines are collected, parsed. */
async function loggedApp(ctx: TestContext, config: Partial<Config> = {}): Promise<{ app: FastifyInstance; lines: Line[] }> {
  const lines: Line[] = [];
  const stream = new Writable({
    write: (chunk, _enc, cb) => {
      for (const text of chunk.toString().split('\n')) if (text) lines.push(JSON.parse(text) as Line);
      cb();
    },
  });
  const app = await buildApp({ config: { ...ctx.config, ...config }, services: ctx.services, logStream: stream });
  return { app, lines };
}

const accessLines = (lines: Line[]) => lines.filter((l) => l.msg === 'request');
const json = { 'content-type': 'application/json' };

describe('access log', () => {
  const ctx = useTestApp('sqlite');
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function fixture() {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id);
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'dev-1', deviceName: 'Dev' } });
    return { t, p, l, validate: JSON.stringify({ licenseKey: l.key, productId: p.id, deviceIdentifier: 'dev-1' }) };
  }

  it('writes one line per request with status, duration, route, request id and client address', async () => {
    const { validate } = await fixture();
    const logged = await loggedApp(ctx);
    app = logged.app;
    const res = await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: validate, remoteAddress: '203.0.113.7' });
    expect(res.statusCode).toBe(200);
    // One line, not Fastify's "incoming request" and "request completed".
    expect(logged.lines.filter((l) => l.reqId !== undefined).map((l) => l.msg)).toEqual(['request']);
    const [line] = accessLines(logged.lines);
    expect(line).toMatchObject({
      level: 30,
      reqId: expect.stringMatching(/^req-/),
      method: 'POST',
      url: '/api/v1/public/licenses/validate',
      route: '/api/v1/public/licenses/validate',
      status: 200,
      ip: '203.0.113.7',
    });
    expect(line!.ms).toBeGreaterThanOrEqual(0);
    expect(line!.ms).toBeLessThan(10_000);
    // A success carries no error detail.
    expect(line).not.toHaveProperty('code');
    expect(line).not.toHaveProperty('userAgent');
  });

  it('logs errors in full: the error code, the user agent and the request size', async () => {
    const logged = await loggedApp(ctx);
    app = logged.app;
    const { p } = await fixture();
    const payload = JSON.stringify({ licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', productId: p.id, deviceIdentifier: 'x', deviceName: 'y' });
    const res = await app.inject({ method: 'POST', url: '/api/v1/public/licenses/activate', headers: { ...json, 'user-agent': 'MyApp/1.2' }, payload });
    expect(res.statusCode).toBe(400);
    expect(accessLines(logged.lines)).toEqual([
      expect.objectContaining({ status: 400, code: 'invalid_license', userAgent: 'MyApp/1.2', requestBytes: String(payload.length), route: '/api/v1/public/licenses/activate' }),
    ]);
  });

  it('logs a 500 at error level, with the error logged beside it', async () => {
    const services = { ...ctx.services, licenses: Object.create(ctx.services.licenses) };
    services.licenses.publicValidate = async () => {
      throw new Error('boom');
    };
    const lines: Line[] = [];
    const stream = new Writable({ write: (chunk, _e, cb) => void (lines.push(JSON.parse(chunk.toString()) as Line), cb()) });
    app = await buildApp({ config: ctx.config, services, logStream: stream });
    await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: '{"licenseKey":"K","productId":"p","deviceIdentifier":"d"}' });
    const line = accessLines(lines)[0]!;
    expect(line).toMatchObject({ level: 50, status: 500, code: 'internal_error' });
    expect(lines.some((l) => l.msg === 'unhandled error' && l.reqId === line.reqId)).toBe(true);
  });

  it('never logs secrets: the portal token in the URL, API keys, license keys, cookies, bodies', async () => {
    const { t, l, validate } = await fixture();
    const logged = await loggedApp(ctx, { logLevel: 'trace' });
    app = logged.app;
    const portalToken = 'pt_SECRET-portal-token-value';
    await app.inject({ method: 'GET', url: `/portal?token=${portalToken}&notice=x` });
    await app.inject({ method: 'GET', url: `/portal?to%6Bel=1&to%6Ben=${portalToken}2` });
    await app.inject({ method: 'GET', url: `/dashboard?TOKEN=${portalToken}3` });
    await app.inject({ method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key, cookie: 'tessera_portal=SECRETCOOKIE' } });
    await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: validate });
    await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: `{"licenseKey":"${l.key}",` }); // 400
    const text = JSON.stringify(logged.lines);
    for (const secret of [portalToken, t.apiKey, l.key, 'SECRETCOOKIE']) expect(text).not.toContain(secret);
    const urls = accessLines(logged.lines).map((line) => line.url);
    expect(urls.slice(0, 3)).toEqual(['/portal?token=[redacted]&notice=x', '/portal?to%6Bel=1&to%6Ben=[redacted]', '/dashboard?TOKEN=[redacted]']);
    // trace shows the arrival lines too, redacted the same way.
    expect(logged.lines.filter((line) => line.msg === 'request received').map((line) => line.url)).toContain('/portal?token=[redacted]&notice=x');
  });

  it('masks license keys in paths and queries (dashboard and portal pages, unknown routes, encoded forms): the last group only', async () => {
    const { t, l } = await fixture();
    const logged = await loggedApp(ctx, { logLevel: 'trace' });
    app = logged.app;
    const session = await ctx.services.dashboard.logIn(t.email, 'correct horse battery');
    const cookie = `tessera_dashboard=${(session as { token: string }).token}`;
    const last = l.key.slice(-5);
    const encoded = l.key.replaceAll('-', '%2D');
    const lower = l.key.toLowerCase();
    await app.inject({ method: 'GET', url: `/dashboard/licenses/${l.key}`, headers: { cookie } });
    await app.inject({ method: 'GET', url: `/dashboard/licenses/${encoded}/events?x=1`, headers: { cookie } });
    await app.inject({ method: 'GET', url: `/dashboard/licenses?q=${l.key}`, headers: { cookie } });
    await app.inject({ method: 'GET', url: `/portal/licenses/${lower}/devices` });
    await app.inject({ method: 'GET', url: `/nothing/here/${l.key}` }); // 404
    const text = JSON.stringify(logged.lines);
    for (const form of [l.key, encoded, lower, lower.toUpperCase().replaceAll('-', '%2d')]) expect(text).not.toContain(form);
    const urls = accessLines(logged.lines).map((line) => line.url);
    expect(urls).toEqual([
      `/dashboard/licenses/*****-*****-*****-*****-${last}`,
      `/dashboard/licenses/*****-*****-*****-*****-${last}/events?x=1`,
      `/dashboard/licenses?q=*****-*****-*****-*****-${last}`,
      `/portal/licenses/*****-*****-*****-*****-${last.toLowerCase()}/devices`,
      `/nothing/here/*****-*****-*****-*****-${last}`,
    ]);
    expect(accessLines(logged.lines)[0]!.route).toBe('/dashboard/licenses/:key');
  });

  it('samples successful public-API lines when asked, never errors or other routes', async () => {
    const { t, validate } = await fixture();
    const logged = await loggedApp(ctx, { logSamplePublic: 0.25 });
    app = logged.app;
    for (let i = 0; i < 8; i++) await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: validate });
    for (let i = 0; i < 3; i++) await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: '{' });
    for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: '/api/v1/products', headers: t.auth });
    const statuses = accessLines(logged.lines).map((l) => `${l.route} ${l.status}`);
    expect(statuses.filter((s) => s === '/api/v1/public/licenses/validate 200')).toHaveLength(2);
    expect(statuses.filter((s) => s === '/api/v1/public/licenses/validate 400')).toHaveLength(3);
    expect(statuses.filter((s) => s === '/api/v1/products 200')).toHaveLength(3);
  });

  it('logs slow requests in full at warn, even when sampled out or below the log level', async () => {
    const { validate } = await fixture();
    const logged = await loggedApp(ctx, { logLevel: 'warn', logSlowMs: 0, logSamplePublic: 0 });
    app = logged.app;
    await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: { ...json, 'user-agent': 'Slow/1' }, payload: validate });
    expect(accessLines(logged.lines)).toEqual([expect.objectContaining({ level: 40, status: 200, slow: true, userAgent: 'Slow/1' })]);
  });

  it('at LOG_LEVEL=warn writes no line for a fast success', async () => {
    const { validate } = await fixture();
    const logged = await loggedApp(ctx, { logLevel: 'warn' });
    app = logged.app;
    await app.inject({ method: 'POST', url: '/api/v1/public/licenses/validate', headers: json, payload: validate });
    expect(logged.lines).toEqual([]);
  });
});

describe('RequestLogger (request.log)', () => {
  function logger() {
    const lines: Record<string, unknown>[] = [];
    const parent = pino({ level: 'info', base: null, timestamp: false }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    return { parent, lines, child: vi.spyOn(parent, 'child'), log: new RequestLogger(parent, { reqId: 'req-7' }) };
  }

  it('makes the pino child only once something is logged through it, with the request id', () => {
    const { parent, lines, child, log } = logger();
    log.debug('below the level');
    expect(log.isLevelEnabled('info')).toBe(true);
    expect(log.isLevelEnabled('debug')).toBe(false);
    expect(log.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
    log.warn({ a: 1 }, 'something');
    log.error('again');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toEqual([
      { level: 40, reqId: 'req-7', a: 1, msg: 'something' },
      { level: 50, reqId: 'req-7', msg: 'again' },
    ]);
    // The access line through the parent, the request id first, is the line the child writes.
    parent.info({ reqId: 'req-7', status: 200 }, 'request');
    log.info({ status: 200 }, 'request');
    expect(lines[2]).toEqual(lines[3]);
  });

  it('gives a level of its own to its own child only', () => {
    const { parent, log } = logger();
    log.level = 'debug';
    expect(log.level).toBe('debug');
    expect(log.isLevelEnabled('debug')).toBe(true);
    expect(parent.level).toBe('info');
    expect(log.child({ job: 'x' }).bindings()).toEqual({ reqId: 'req-7', job: 'x' });
  });
});

describe('writeInfoLine (the access line of a success)', () => {
  it("writes the line byte for byte as pino's info() writes it", () => {
    const written: string[] = [];
    const stream = { write: (text: string) => void written.push(text) };
    const log = pino({ ...loggerOptions('info'), timestamp: () => ',"time":1763900000000' }, stream);
    const lines: AccessLine[] = [
      { reqId: 'req-1', method: 'POST', url: '/api/v1/public/licenses/validate', route: '/api/v1/public/licenses/validate', status: 200, ms: 0.3, ip: '127.0.0.1' },
      { reqId: undefined, method: 'GET', url: '/x?q="a\\b"\u0001é\u2028', route: undefined, status: 204, ms: 12, ip: '::ffff:10.0.0.1' },
    ];
    for (const line of lines) {
      writeInfoLine(log, line);
      log.info(line, 'request');
      const [ours, pinos] = written.splice(0);
      expect(ours).toMatch(/^\{"level":30,"time":1763900000000,"pid":\d+,"hostname":.*"msg":"request"\}\n$/s);
      expect(ours).toBe(pinos);
    }
  });
});

describe('redactUrl', () => {
  it('leaves URLs without secret parameters or license keys as they are', () => {
    for (const url of ['/api/v1/public/licenses/validate', '/portal?notice=reset', '/a?tokens=1&x', '/a?', '/api/v1/public/products/p_1/license-token/public-key', '/a%2Db%20c', '/ABCDE-FGHIJ-KLMNO-PQRST']) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  it('redacts every secret parameter, however its name is spelled or encoded', () => {
    expect(redactUrl('/portal?token=abc&token=def')).toBe('/portal?token=[redacted]&token=[redacted]');
    expect(redactUrl('/x?a=1&Api%4Bey=sk_1&b')).toBe('/x?a=1&Api%4Bey=[redacted]&b');
    expect(redactUrl('/x?%20token%20=1')).toBe('/x?%20token%20=[redacted]');
    expect(redactUrl('/x?password')).toBe('/x?password=[redacted]');
    // A name that does not decode is kept out too: the value may be a secret under another parser.
    expect(redactUrl('/x?to%ZZken=1')).toBe('/x?to%ZZken=[redacted]');
  });
});

describe('log settings', () => {
  it('reads LOG_SLOW_MS and LOG_SAMPLE_PUBLIC, with defaults', () => {
    const base = { SECRET_KEY: 'a'.repeat(64) };
    expect(loadConfig(base)).toMatchObject({ logLevel: 'info', logSlowMs: 1000, logSamplePublic: 1 });
    expect(loadConfig({ ...base, LOG_SLOW_MS: '250', LOG_SAMPLE_PUBLIC: '0.1' })).toMatchObject({ logSlowMs: 250, logSamplePublic: 0.1 });
  });

  it('refuses values out of range, naming the variable', () => {
    const base = { SECRET_KEY: 'a'.repeat(64) };
    expect(() => loadConfig({ ...base, LOG_SLOW_MS: '-1' })).toThrow(/LOG_SLOW_MS/);
    expect(() => loadConfig({ ...base, LOG_SLOW_MS: 'soon' })).toThrow(/LOG_SLOW_MS/);
    expect(() => loadConfig({ ...base, LOG_SAMPLE_PUBLIC: '2' })).toThrow(/LOG_SAMPLE_PUBLIC/);
    expect(() => loadConfig({ ...base, LOG_SAMPLE_PUBLIC: 'half' })).toThrow(/LOG_SAMPLE_PUBLIC/);
  });
});

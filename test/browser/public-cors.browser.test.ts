import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens } from '../support/license-tokens.ts';

/**
 * A web app on one origin calling the public API on another, in a real Chromium: the preflight,
 * the CORS answer and the browser's own enforcement, with the headers a client library sets
 * (keyforge's client SDK sets a User-Agent; Chromium drops it, so an X- header carries the
 * check of a custom header through Chromium).
 */
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') throw new Error(`CI must run the browser tests: ${CHROMIUM} is missing`);
if (!available) console.warn(`\n[tessera tests] ${CHROMIUM} is not installed: the CORS BROWSER tests are SKIPPED (CI runs them).\n`);

const listen = (server: Server, host: string) =>
  new Promise<number>((resolve) => server.listen(0, host, () => resolve((server.address() as { port: number }).port)));
const close = (server: Server) => new Promise((resolve) => server.close(resolve));

describe.skipIf(!available)('the public API from a page on another origin, in Chromium', () => {
  const ctx = useTestApp('sqlite');
  const preflights: IncomingHttpHeaders[] = [];
  const sent: IncomingHttpHeaders[] = [];
  let apiUrl = '';
  let pageUrl = '';
  let context: BrowserContext;
  let profile = '';
  // The API on "localhost", served by the app itself (fastify.routing), recording each preflight.
  const api = createServer((req, res) => {
    (req.method === 'OPTIONS' ? preflights : sent).push(req.headers);
    ctx.app.routing(req, res);
  });
  // The web app on "127.0.0.1": another origin.
  const site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>App</title><h1>App</h1>'));

  beforeAll(async () => {
    apiUrl = `http://localhost:${await listen(api, 'localhost')}`;
    pageUrl = `http://127.0.0.1:${await listen(site, '127.0.0.1')}/`;
    profile = mkdtempSync(join(tmpdir(), 'tessera-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  });

  afterAll(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    await close(api);
    await close(site);
  });

  /** Runs fetch in the page: what a browser app's client library does. */
  async function fromPage(calls: { path: string; method?: string; body: unknown; headers: Record<string, string> }[]) {
    const page = await context.newPage();
    await page.goto(pageUrl);
    const results = await page.evaluate(
      async ({ base, calls }) =>
        Promise.all(
          calls.map(async ({ path, method, body, headers }) => {
            try {
              const res = await fetch(base + path, { method: method ?? 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
              return { status: res.status, body: await res.json().catch(() => null) };
            } catch (e) {
              return { failed: String(e) };
            }
          }),
        ),
      { base: apiUrl, calls },
    );
    await page.close();
    return results as { status?: number; body?: any; failed?: string }[];
  }

  it('activates, validates and refreshes a token with a User-Agent and an X-Client header set in fetch', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    await configureTokens(ctx, t, p.id);
    const l = await createLicense(ctx, t, p.id);
    const headers = { 'User-Agent': 'keyforge-node-client:1.0.0', 'X-Client': 'aurora-web/2.1' };
    const query = { licenseKey: l.key, deviceIdentifier: 'browser-1', productId: p.id };

    const [activation] = await fromPage([{ path: '/api/v1/public/licenses/activate', body: { ...query, deviceName: 'Chromium' }, headers }]);
    expect(activation).toMatchObject({ status: 200, body: { isValid: true, status: 'active', token: expect.any(String) } });
    const [validation, refresh] = await fromPage([
      { path: '/api/v1/public/licenses/validate', body: query, headers },
      { path: '/api/v1/public/licenses/token', body: query, headers },
    ]);
    expect(validation).toMatchObject({ status: 200, body: { isValid: true, status: 'active', device: { identifier: 'browser-1' } } });
    expect(refresh).toMatchObject({ status: 200, body: { isValid: true, status: 'active', token: expect.any(String) } });

    // What Chromium really asked for: the X- header and the JSON content type. Chromium drops a
    // script-set User-Agent (it sends its own and does not preflight it); Firefox keeps it and asks
    // for `content-type,user-agent`, which public-cors.security.test.ts answers at the HTTP level.
    const asked = preflights.map((h) => String(h['access-control-request-headers']).split(',').sort().join(','));
    expect(asked.length).toBeGreaterThanOrEqual(1);
    for (const list of asked) expect(list).toBe('content-type,x-client');
    expect(sent.every((h) => h['x-client'] === 'aurora-web/2.1' && h['user-agent'] !== 'keyforge-node-client:1.0.0')).toBe(true);
  });

  it('an error is readable across origins (a 400 and an unknown path), and a refused header is refused by the browser itself', async () => {
    const [bad, unknown, refused] = await fromPage([
      { path: '/api/v1/public/licenses/activate', body: { licenseKey: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', deviceIdentifier: 'd', deviceName: 'n', productId: 'p_x' }, headers: { 'User-Agent': 'x' } },
      { path: '/api/v1/public/licenses/deactivate', body: {}, headers: {} },
      { path: '/api/v1/public/licenses/validate', body: {}, headers: { 'X-Forwarded-For': '1.2.3.4' } },
    ]);
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_license' } } });
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(refused?.failed).toMatch(/Failed to fetch/);
  });
});

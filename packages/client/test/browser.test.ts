import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLicense, createProduct, createTenant, useTestApp } from '../../../test/support/app.ts';
import { configureTokens } from '../../../test/support/license-tokens.ts';
import { forEachStore } from '../../../test/support/stores.ts';

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') throw new Error(`CI must run the browser tests: ${CHROMIUM} is missing`);
if (!available) console.warn(`\n[tessera tests] ${CHROMIUM} is not installed: the client SDK BROWSER test is SKIPPED (CI runs it).\n`);

const SOURCE = join(import.meta.dirname, '../src');

/**
 * The SDK's sources, compiled to plain ES modules per request (no build step), and an empty
 * page, served from their own origin: the page then calls the API cross-origin, as a web app does.
 */
async function serveSdk(): Promise<{ origin: string; server: Server }> {
  const modules = new Map(
    readdirSync(SOURCE)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => {
        const js = ts.transpileModule(readFileSync(join(SOURCE, f), 'utf8'), { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
        return [`/sdk/${f.replace(/\.ts$/, '.js')}`, js];
      }),
  );
  const server = createServer((req, res) => {
    const js = modules.get(req.url ?? '');
    if (js) res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

forEachStore('client SDK in a browser', (kind) => {
  const ctx = useTestApp(kind);
  let browser: Browser | undefined;
  let sdk: { origin: string; server: Server };

  beforeAll(async () => {
    if (!available) return;
    sdk = await serveSdk();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  });
  afterAll(async () => {
    await browser?.close();
    sdk?.server.close();
  });

  it.runIf(available)('activates cross-origin, verifies with WebCrypto and keeps the token in localStorage', async () => {
    const apiBase = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const tenant = await createTenant(ctx);
    const product = await createProduct(ctx, tenant);
    const { publicKeyJwk } = await configureTokens(ctx, tenant, product.id);
    const license = await createLicense(ctx, tenant, product.id);

    const page = await browser!.newPage();
    await page.goto(`${sdk.origin}/app`);
    // A script string, not a function: the test runner would rewrite a function's import().
    const params = JSON.stringify({ apiBase, productId: product.id, publicKey: publicKeyJwk, licenseKey: license.key });
    const outcome = await page.evaluate(`(async ({ apiBase, productId, publicKey, licenseKey }) => {
      const { LicenseClient, WebStorageTokenStorage } = await import('/sdk/index.js');
      const client = new LicenseClient({ baseUrl: apiBase, productId, publicKey, storage: new WebStorageTokenStorage(localStorage) });
      const activation = await client.activate({ licenseKey, deviceIdentifier: 'browser-1', deviceName: 'Chromium' });
      const stored = localStorage.getItem('tessera.licenseToken');
      const state = await client.validateAndRefreshToken('browser-1');
      const forged = stored ? stored.slice(0, -4) + 'AAAA' : '';
      return { activated: activation.ok, stored: typeof stored === 'string', state, forged: await client.verifyToken(forged, 'browser-1') };
    })(${params})`);
    expect(outcome).toMatchObject({
      activated: true,
      stored: true,
      state: { valid: true, status: 'active', offline: false, claims: { license: { key: license.key }, device: { identifier: 'browser-1' } } },
      forged: { valid: false, code: 'bad_signature' },
    });
    await page.close();
  });
});

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices, type Services } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import type { TestDatabase } from './stores.ts';

/** Browser tests (portal, dashboard): Debian's Chromium through playwright-core, the real server on a real port. */
export const CHROMIUM = '/usr/bin/chromium';
export const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') throw new Error(`CI must run the browser tests: ${CHROMIUM} is missing`);
if (!available) console.warn(`\n[tessera tests] ${CHROMIUM} is not installed: the BROWSER tests are SKIPPED (CI runs them).\n`);

// UPDATE_SCREENSHOTS=1 refreshes the pictures in docs/screenshots; otherwise they go to a temp dir.
export const UPDATE_SHOTS = process.env.UPDATE_SCREENSHOTS === '1';
export const SHOTS = UPDATE_SHOTS ? resolve('docs/screenshots') : mkdtempSync(join(tmpdir(), 'tessera-shots-'));
afterAll(() => {
  if (!UPDATE_SHOTS) rmSync(SHOTS, { recursive: true, force: true });
});
export const PHONE = { width: 390, height: 844 };
export const BROWSER_CASE_TIMEOUT = 120_000;
export const DESKTOP = { width: 1280, height: 900 };

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const profiles = new Map<BrowserContext, string>();

/** Debian's Chromium with a fresh profile (Playwright passes it as --user-data-dir). */
export async function launchChromium(options: { javaScriptEnabled?: boolean } = {}): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'tessera-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, ...options });
  profiles.set(context, profile);
  return context;
}

export async function closeChromium(context: BrowserContext | undefined): Promise<void> {
  if (!context) return;
  await context.close();
  // Chromium may still be flushing its profile as it exits.
  rmSync(profiles.get(context)!, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

export interface Running {
  app: FastifyInstance;
  store: Store;
  services: Services;
  baseUrl: string;
}

/** The real server on a real port, as `npm start` wires it, against the suite's database (`env`: more settings, e.g. STRIPE_API_URL). */
export async function startApp(database: TestDatabase, port: number, smtpUrl: string, retryBaseMs?: number, env: Record<string, string> = {}): Promise<Running> {
  const baseUrl = `http://127.0.0.1:${port}`;
  const config = loadConfig({ ...database.env, PORT: String(port), HOST: '127.0.0.1', BASE_URL: baseUrl, SMTP_URL: smtpUrl, RATE_LIMIT: 'off', ...env });
  const store = await database.open();
  const services = createServices(store, config.secretKey, undefined, config);
  const app = await buildApp({ config, services, logger: false, mail: { worker: { pollMs: 100, ...(retryBaseMs ? { retryBaseMs } : {}) } } });
  await app.listen({ port, host: '127.0.0.1' });
  return { app, store, services, baseUrl };
}

export async function stopApp(running: Running | undefined): Promise<void> {
  await running?.app.close();
  await running?.store.close();
}


import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';

const PASSWORD = 'correct horse battery';

/** The licensing model's screens (issue 35): product settings, the license's editor, last seen and leases, key rotation. */
for (const kind of storeKinds()) {
  describe.skipIf(!available)(`licensing model in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let page: Page;
    let productId: string;
    let licenseKey: string;
    let principal: ReturnType<typeof cliPrincipal>;

    async function shoot(name: string): Promise<void> {
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-desktop.png`), fullPage: true });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-phone.png`), fullPage: true });
      await page.setViewportSize(DESKTOP);
    }
    const heading = () => page.getByRole('heading', { level: 1 }).textContent();
    const base = () => running!.baseUrl;
    /** A form's CSRF token replaced by another, as a forged post from another site would carry. */
    const forgeToken = (form: string) =>
      page.evaluate((selector) => {
        (document.querySelector(`${selector} input[name=csrf]`) as HTMLInputElement).value = 'A'.repeat(43);
      }, form);

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      running = await startApp(database, await freePort(), await smtp.start());
      const account = await running.services.accounts.create({ email: 'owner@model.test', password: PASSWORD });
      principal = cliPrincipal(account.id);
      productId = (await running.services.products.create(principal, { name: 'Render Farm' } as never)).id;
      licenseKey = (await running.services.licenses.create(principal, { productId, type: 'perpetual', maxDevices: 3, email: 'studio@model.test', metadata: { crm: 'ACME-42' } } as never)).key;
      context = await launchChromium();
      page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
      await page.goto(`${base()}/dashboard/login`);
      await page.getByLabel('E-mail address').fill('owner@model.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await database?.drop();
    });

    it('product settings: every wrong field named at once, then saved; a forged token is refused', async () => {
      await page.goto(`${base()}/dashboard/products/${productId}`);
      await page.getByLabel('Default entitlements').fill('pro Render.GPU');
      await page.getByLabel(/^Floating seats/).check();
      await page.getByLabel('Lease length (seconds)').fill('30');
      await page.getByLabel(/^Trials/).check();
      await page.getByLabel('Trial length (days)').fill('400');
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await page.getByRole('alert').first().textContent()).toContain('3 fields need a fix');
      expect(await page.locator('#f-defaultEntitlements-error').textContent()).toContain('not "Render.GPU"');
      expect(await page.locator('#f-leaseSeconds-error').textContent()).toBe('Lease length (seconds) must be at least 60.');
      expect(await page.locator('#f-trialDays-error').textContent()).toBe('Trial length (days) must be at most 365.');
      expect(await page.getByLabel('Lease length (seconds)').getAttribute('aria-invalid')).toBe('true');
      await shoot('product-model-errors');
      const unchanged = await running!.services.products.get(principal, productId);
      expect(unchanged.floating.enabled).toBe(false);

      await page.getByLabel('Default entitlements').fill('pro render.gpu');
      await page.getByLabel('Lease length (seconds)').fill('300');
      await page.getByLabel('Trial length (days)').fill('14');
      await forgeToken('form.panel');
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await heading()).toBe('This form has expired');
      expect((await running!.services.products.get(principal, productId)).floating.enabled).toBe(false);

      await page.goto(`${base()}/dashboard/products/${productId}`);
      await page.getByLabel('Default entitlements').fill('pro render.gpu');
      await page.getByLabel(/^Floating seats/).check();
      await page.getByLabel('Lease length (seconds)').fill('300');
      await page.getByLabel(/^Trials/).check();
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Changes saved.');
      const saved = await running!.services.products.get(principal, productId);
      expect(saved.defaultEntitlements).toEqual(['pro', 'render.gpu']);
      expect(saved.floating).toEqual({ enabled: true, leaseSeconds: 300 });
      expect(saved.trial.enabled).toBe(true);
      await page.getByRole('group', { name: 'Licensing model' }).scrollIntoViewIfNeeded();
      await shoot('product-model');
    }, BROWSER_CASE_TIMEOUT);

    it("the license's entitlements and metadata: a value past Stripe's limit is named, then saved; devices show last seen and lease end", async () => {
      // A node on the (now floating) product takes a seat through the public API.
      const activated = await fetch(`${base()}/api/v1/public/licenses/activate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ licenseKey, deviceIdentifier: 'node-7', deviceName: 'render-node-7', productId }),
      });
      expect(activated.status).toBe(200);
      await page.goto(`${base()}/dashboard/licenses/${licenseKey}`);
      const devices = page.getByRole('table', { name: 'Devices' });
      expect(await devices.getByRole('columnheader').allTextContents()).toEqual(['Name', 'Identifier', 'Activated', 'Last seen', 'Lease ends', 'Action']);
      expect(await devices.getByRole('row', { name: /render-node-7/ }).textContent()).toMatch(/UTC.*UTC.*UTC/);
      expect(await page.getByLabel('Key 1').inputValue()).toBe('crm');

      await page.getByLabel('Entitlements', { exact: true }).fill('pro render.gpu render.cpu');
      await page.getByLabel('Key 2').fill('seats-paid');
      await page.getByLabel('Value 2').fill('x'.repeat(501));
      await page.getByLabel('Value 3').fill('no key');
      await page.getByRole('button', { name: 'Save entitlements and metadata' }).click();
      expect(await page.locator('#f-metaValue1-error').textContent()).toBe('Value 2 must be at most 500 characters.');
      expect(await page.locator('#f-metaKey2-error').textContent()).toBe('Key 3 is required for a value.');
      expect(await page.getByLabel('Entitlements', { exact: true }).inputValue()).toBe('pro render.gpu render.cpu');
      const stored = await running!.services.licenses.get(principal, licenseKey);
      expect([stored.entitlements, { ...stored.metadata }]).toEqual([[], { crm: 'ACME-42' }]);

      await forgeToken('section[aria-labelledby=model-title] form');
      await page.getByRole('button', { name: 'Save entitlements and metadata' }).click();
      expect(await heading()).toBe('This form has expired');

      await page.goto(`${base()}/dashboard/licenses/${licenseKey}`);
      await page.getByLabel('Entitlements', { exact: true }).fill('pro render.gpu render.cpu');
      await page.getByLabel('Key 2').fill('seats-paid');
      await page.getByLabel('Value 2').fill('12');
      await page.getByRole('button', { name: 'Save entitlements and metadata' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Entitlements and metadata saved.');
      expect(await page.locator('dl.facts').textContent()).toContain('Entitlementspro render.gpu render.cpu');
      expect(await page.getByLabel('Key 2').inputValue()).toBe('seats-paid');
      await shoot('license-model');
    }, BROWSER_CASE_TIMEOUT);

    it('rotate key asks first, e-mails the customer if asked, and shows the new key once', async () => {
      await page.goto(`${base()}/dashboard/licenses/${licenseKey}`);
      await page.getByRole('button', { name: 'Rotate key…' }).click();
      expect(await heading()).toBe('Rotate the key of this license?');
      await page.getByLabel('E-mail the new key to studio@model.test').check();
      await shoot('rotate-key-confirm');
      await page.getByRole('button', { name: 'Rotate key' }).click();
      expect(await heading()).toBe('New license key');
      const newKey = (await page.locator('#new-license-key').textContent())!;
      expect(newKey).toMatch(/^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$/);
      expect(newKey).not.toBe(licenseKey);
      // With JavaScript, the copy button shows.
      expect(await page.getByRole('button', { name: 'Copy key' }).isVisible()).toBe(true);
      await shoot('rotate-key');
      const mail = await smtp.waitFor('studio@model.test', /./);
      expect(mail.text).toContain(newKey);
      await page.getByRole('link', { name: 'Open the license' }).click();
      expect(await page.locator('.page-head .key-text').textContent()).toBe(newKey);
      expect(await page.getByRole('table', { name: 'Devices' }).textContent()).toContain('render-node-7');
      await page.goto(`${base()}/dashboard/licenses/${licenseKey}`);
      expect(await heading()).not.toBe('License');
    }, BROWSER_CASE_TIMEOUT);
  });
}

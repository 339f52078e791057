import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';

const PASSWORD = 'correct horse battery';

/** A logo drawn by the browser itself: a rounded mark with the vendor's initials. */
async function logoPng(context: BrowserContext): Promise<Buffer> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 96, height: 96 });
  await page.setContent(`<body style="margin:0;background:transparent"><div style="width:96px;height:96px;border-radius:22px;display:flex;align-items:center;justify-content:center;
    background:linear-gradient(135deg,#c2410c,#9a3412);color:#fff;font:800 40px -apple-system,Segoe UI,Roboto,Arial,sans-serif">NT</div></body>`);
  const png = await page.screenshot({ type: 'png', omitBackground: true });
  await page.close();
  return png;
}

for (const kind of storeKinds()) {
  describe.skipIf(!available)(`branding in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let page: Page;
    let accountId: string;
    const files = join(tmpdir(), `tessera-branding-${process.pid}-${kind}`);

    async function shoot(p: Page, name: string): Promise<void> {
      await p.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true });
      await p.setViewportSize(PHONE);
      await p.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true });
      await p.setViewportSize(DESKTOP);
    }

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      running = await startApp(database, await freePort(), await smtp.start());
      accountId = (await running.services.accounts.create({ email: 'owner@northwind.test', password: PASSWORD })).id;
      context = await launchChromium();
      page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
      mkdirSync(files, { recursive: true });
      writeFileSync(join(files, 'logo.png'), await logoPng(context));
      writeFileSync(join(files, 'big.png'), Buffer.concat([await logoPng(context), Buffer.alloc(300 * 1024)]));
      writeFileSync(join(files, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>');
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await database?.drop();
    });

    it('an owner sets the brand on the Branding screen; bad input is shown beside its field and stores nothing', async () => {
      await page.goto(`${running!.baseUrl}/dashboard/login`);
      await page.getByLabel('E-mail address').fill('owner@northwind.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Branding', exact: true }).click();
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Branding');

      await page.getByLabel('Display name').fill('Northwind Tools');
      await page.getByLabel('Accent colour').fill('orange; } body { display: none');
      await page.getByLabel('Logo', { exact: true }).setInputFiles(join(files, 'logo.svg'));
      await page.getByRole('button', { name: 'Save branding' }).click();
      expect(await page.locator('#f-accentColor-error').textContent()).toContain('must be a colour as #rrggbb');
      expect(await page.locator('#f-logo-error').textContent()).toContain('must be a PNG, JPEG or WebP');
      await page.getByLabel('Accent colour').fill('#c2410c');
      await page.getByLabel('Logo', { exact: true }).setInputFiles(join(files, 'big.png'));
      await page.getByRole('button', { name: 'Save branding' }).click();
      expect(await page.locator('#f-logo-error').textContent()).toContain('larger than 256 KiB');
      expect(await running!.services.branding.get(accountId)).toMatchObject({ displayName: null, accentColor: null, logo: null });

      await page.getByLabel('Logo', { exact: true }).setInputFiles(join(files, 'logo.png'));
      await page.getByRole('button', { name: 'Save branding' }).click();
      await page.waitForURL(/notice=branding-saved/);
      expect(await page.getByRole('status').or(page.locator('.notice')).first().textContent()).toContain('Branding saved');
      const preview = page.getByRole('img', { name: 'Your logo' });
      expect(await preview.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(96);
      await shoot(page, 'dashboard-branding');
    }, BROWSER_CASE_TIMEOUT);

    it('the customer gets branded e-mails (sender name, header, signature) and a branded portal', async () => {
      const principal = cliPrincipal(accountId);
      const product = await running!.services.products.create(principal, { name: 'Northwind Sync' } as never);
      await running!.services.licenses.create(principal, { productId: product.id, type: 'perpetual', maxDevices: 2, email: 'buyer@example.com', sendEmail: true } as never);
      const purchase = await smtp.waitFor('buyer@example.com', /Your license key for Northwind Sync/);
      expect(purchase.from?.value[0]).toMatchObject({ name: 'Northwind Tools', address: 'no-reply@localhost' });
      expect(purchase.text).toMatch(/^Northwind Tools\n/);
      expect(purchase.text).toMatch(/\n-- \nNorthwind Tools\n?$/);
      const mailPage = await context.newPage();
      await mailPage.setViewportSize({ width: 720, height: 900 });
      await mailPage.setContent(purchase.html as string, { waitUntil: 'load' });
      expect(await mailPage.getByRole('img', { name: 'Northwind Tools' }).evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(96);
      expect(await mailPage.getByText('— Northwind Tools').isVisible()).toBe(true);
      await mailPage.screenshot({ path: join(SHOTS, 'purchase-email-branded.png'), fullPage: true });
      await mailPage.close();

      // The portal link the customer asks for carries the brand too, and opens the branded portal.
      const portal = await context.newPage();
      await portal.setViewportSize(DESKTOP);
      await portal.goto(`${running!.baseUrl}/portal/request?email=buyer@example.com`);
      await portal.getByRole('button', { name: 'Send me a link' }).click();
      const linkMail = await smtp.waitFor('buyer@example.com', /Your license portal link/);
      expect(linkMail.from?.value[0]?.name).toBe('Northwind Tools');
      const link = /http:\/\/[^\s]+\/portal\?token=[A-Za-z0-9_-]+/.exec(linkMail.text ?? '')![0];
      await portal.goto(link);
      expect(await portal.title()).toBe('Your licenses · Northwind Tools');
      const brand = portal.getByRole('banner').getByRole('link', { name: 'Northwind Tools' });
      expect(await brand.isVisible()).toBe(true);
      expect(await portal.locator('img.brand-logo').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(96);
      // The accent, through its own stylesheet (the CSP allows no inline style): the page's brand colour is it.
      expect(await portal.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--brand').trim())).toBe('#c2410c');
      expect(await portal.locator('header.topbar').evaluate((h) => getComputedStyle(h).borderTopColor)).toBe('rgb(194, 65, 12)');
      await shoot(portal, 'portal-branded');
      await portal.close();
    }, BROWSER_CASE_TIMEOUT);
  });
}

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  available,
  BROWSER_CASE_TIMEOUT,
  closeChromium,
  DESKTOP,
  freePort,
  launchChromium,
  PHONE,
  type Running,
  SHOTS,
  startApp,
  stopApp,
} from '../support/browser.ts';
import { outboxFor } from '../support/mail.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';
import { cliPrincipal } from '../../src/core/principal.ts';

/** A product image drawn by the browser itself: a banner with the product's name. */
async function bannerPng(context: BrowserContext): Promise<Buffer> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 600, height: 200 });
  await page.setContent(`<body style="margin:0"><div style="width:600px;height:200px;display:flex;align-items:center;justify-content:center;
    background:linear-gradient(135deg,#1d4ed8,#7c3aed);color:#fff;font:700 44px -apple-system,Segoe UI,Roboto,Arial,sans-serif;letter-spacing:1px">Aurora Photo</div></body>`);
  const png = await page.screenshot({ type: 'png' });
  await page.close();
  return png;
}

for (const kind of storeKinds()) {
  describe.skipIf(!available)(`portal in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    let smtpUrl = '';
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let auth: Record<string, string>;

    const api = async (method: 'POST' | 'PATCH' | 'PUT' | 'GET', url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await running!.app.inject({ method, url, headers: { ...auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, payload: body === undefined ? undefined : JSON.stringify(body) });
      if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.body ? JSON.parse(res.body) : undefined;
    };

    beforeAll(async () => {
      smtpUrl = await smtp.start();
      database = await createTestDatabase(kind);
      running = await startApp(database, await freePort(), smtpUrl);
      const account = await running.services.accounts.create({ email: 'owner@aurora.test', password: 'correct horse battery', plan: 'plus' });
      auth = { authorization: `Bearer ${(await running.services.apiKeys.create(cliPrincipal(account.id), 'browser test')).secret}` };
      context = await launchChromium();
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await database?.drop();
    });

    it('walks the purchase e-mail, the link request, the portal and device resets', async () => {
      const photo = await api('POST', '/api/v1/products', {
        name: 'Aurora Photo',
        description: 'Fast, private photo editing for Mac and Windows.',
        supportEmail: 'support@aurora.test',
        purchaseNote: 'Download the installer, start the app and paste your license key when asked.',
        actionButtonText: 'Download Aurora Photo',
        actionButtonUrl: 'https://aurora.test/download?key={key}',
      });
      const sync = await api('POST', '/api/v1/products', { name: 'Nimbus Sync', portalAllowDeviceReset: false });
      const image = await bannerPng(context);
      const upload = await running!.app.inject({ method: 'PUT', url: `/api/v1/products/${photo.id}/image`, headers: { ...auth, 'content-type': 'image/png' }, payload: image });
      expect(upload.statusCode).toBe(200);

      // The purchase e-mail, through real SMTP, image included.
      const license = await api('POST', '/api/v1/licenses', { productId: photo.id, type: 'timed', expiresAt: '2027-11-22', maxDevices: 3, email: 'Customer@Example.com', sendEmail: true });
      const syncLicense = await api('POST', '/api/v1/licenses', { productId: sync.id, type: 'perpetual', maxDevices: 1, email: 'customer@example.com' });
      for (const [key, productId, identifier, name] of [
        [license.key, photo.id, 'a4:83:e7:1c:22:0f', 'MacBook Pro'],
        [license.key, photo.id, 'WIN-7Q2K-4471', 'Studio PC'],
        [syncLicense.key, sync.id, 'f1e2d3c4-aaaa-bbbb-cccc-0123456789ab', 'Office laptop'],
      ]) {
        await api('POST', '/api/v1/licenses/activate', { productId, device: { identifier, name } }, { 'license-key': key });
      }
      const purchase = await smtp.waitFor('customer@example.com', /Your license key for Aurora Photo/);
      expect(purchase.from?.text).toContain('no-reply@localhost');
      expect(purchase.replyTo?.text).toBe('support@aurora.test');
      expect(purchase.text).toContain(license.key);
      expect(purchase.text).toContain('support@aurora.test');
      const imageUrl = `${running!.baseUrl}/api/v1/public/products/${photo.id}/image`;
      expect(purchase.html).toContain(`src="${imageUrl}"`);
      expect(purchase.html).toContain(`https://aurora.test/download?key=${license.key}`);

      const mailPage = await context.newPage();
      await mailPage.setViewportSize({ width: 720, height: 900 });
      await mailPage.setContent(purchase.html as string, { waitUntil: 'load' });
      const imageWidth = await mailPage.locator(`img[src="${imageUrl}"]`).evaluate((img: HTMLImageElement) => img.naturalWidth);
      expect(imageWidth).toBe(600);
      await expect(mailPage.getByText(license.key, { exact: true }).isVisible()).resolves.toBe(true);
      await mailPage.screenshot({ path: join(SHOTS, 'purchase-email.png'), fullPage: true });
      await mailPage.close();

      // Ask for a link with the form, as a customer would (the address is pre-filled from ?email=).
      const page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      await page.goto(`${running!.baseUrl}/portal/request?email=customer%40example.com`);
      expect(await page.getByLabel('E-mail address').inputValue()).toBe('customer@example.com');
      await page.screenshot({ path: join(SHOTS, 'portal-request-desktop.png') });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, 'portal-request-phone.png') });
      await page.getByLabel('E-mail address').fill('CUSTOMER@example.com');
      await page.getByRole('button', { name: 'Send me a link' }).click();
      await expect(page.getByRole('status').first().textContent()).resolves.toContain('a link to your portal is on its way');

      const linkMail = await smtp.waitFor('customer@example.com', /Your license portal link/);
      const link = /http:\/\/127\.0\.0\.1:\d+\/portal\?token=[\w-]+/.exec(linkMail.text ?? '')![0];
      expect(linkMail.html).toContain(`href="${link}"`);

      await page.setViewportSize(DESKTOP);
      await page.goto(link);
      expect(new URL(page.url()).pathname).toBe('/portal');
      expect(new URL(page.url()).search).toBe('');
      const photoCard = page.locator(`#license-${license.key}`);
      const syncCard = page.locator(`#license-${syncLicense.key}`);
      await expect(photoCard.getByRole('heading', { name: 'Aurora Photo' }).isVisible()).resolves.toBe(true);
      await expect(syncCard.getByRole('heading', { name: 'Nimbus Sync' }).isVisible()).resolves.toBe(true);
      expect(await photoCard.textContent()).toContain('MacBook Pro');
      expect(await photoCard.textContent()).toContain('support@aurora.test');
      expect(await syncCard.textContent()).toContain('owner@aurora.test');
      // With JavaScript on, the copy button appears.
      await expect(photoCard.getByRole('button', { name: 'Copy key' }).isVisible()).resolves.toBe(true);
      await page.screenshot({ path: join(SHOTS, 'portal-desktop.png'), fullPage: true });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, 'portal-phone.png'), fullPage: true });
      await page.setViewportSize(DESKTOP);

      // Keyboard only: tab to the reset button of the first license and press Enter; the reset asks first.
      await photoCard.getByRole('button', { name: 'Reset devices…' }).focus();
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: 'Reset the devices of Aurora Photo?' }).waitFor();
      expect(await page.textContent('main')).toContain('It uses one of your 3 resets left');
      await page.screenshot({ path: join(SHOTS, 'portal-reset-confirm.png'), fullPage: true });
      await page.getByRole('button', { name: 'Reset devices', exact: true }).focus();
      await page.keyboard.press('Enter');
      await page.waitForURL(/notice=reset/);
      await expect(page.getByText('Devices reset.').isVisible()).resolves.toBe(true);
      expect(await photoCard.textContent()).toContain('No device is using this license yet.');
      expect(await photoCard.textContent()).toContain('2 of 3 resets left');
      const stored = await api('GET', '/api/v1/licenses', undefined, { 'license-key': license.key });
      expect(stored.activeDevices).toEqual([]);

      // Nimbus Sync forbids portal resets: no button, and a forged form is refused.
      expect(await syncCard.getByRole('button', { name: 'Reset devices' }).count()).toBe(0);
      expect(await syncCard.textContent()).toContain('Device resets are not available in the portal for this product');
      await page.evaluate((key) => {
        const csrf = (document.querySelector('input[name=csrf]') as HTMLInputElement).value;
        const form = document.createElement('form');
        form.method = 'post';
        form.action = '/portal/licenses/reset';
        for (const [name, value] of [['csrf', csrf], ['key', key]]) {
          const input = document.createElement('input');
          input.type = 'hidden';
          input.name = name;
          input.value = value!;
          form.append(input);
        }
        document.body.append(form);
        form.submit();
      }, syncLicense.key);
      await page.waitForLoadState('load');
      await expect(page.getByRole('alert').textContent()).resolves.toContain('Device resets are not available for this product');
      expect((await api('GET', '/api/v1/licenses', undefined, { 'license-key': syncLicense.key })).activeDevices).toHaveLength(1);

      // Signing out ends the session; the page after it offers a new link.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/signed-out/);
      await page.goto(`${running!.baseUrl}/portal?token=expired-or-made-up`);
      await expect(page.getByRole('heading', { name: 'This link has expired' }).isVisible()).resolves.toBe(true);
      await page.screenshot({ path: join(SHOTS, 'portal-link-expired.png') });
      await page.getByRole('link', { name: 'Get a new link' }).click();
      expect(new URL(page.url()).pathname).toBe('/portal/request');
      await page.close();
    }, BROWSER_CASE_TIMEOUT);

    it('works without JavaScript: forms submit and the key stays selectable text', async () => {
      const product = await api('POST', '/api/v1/products', { name: 'Plain Tool' });
      const license = await api('POST', '/api/v1/licenses', { productId: product.id, type: 'perpetual', maxDevices: 1, email: 'nojs@example.com' });
      await api('POST', '/api/v1/licenses/activate', { productId: product.id, device: { identifier: 'nojs-1', name: 'Old PC' } }, { 'license-key': license.key });
      const { url } = await api('POST', '/api/v1/portal/sessions/private', { email: 'nojs@example.com' });
      const noScript = await launchChromium({ javaScriptEnabled: false });
      const page: Page = await noScript.newPage();
      await page.goto(url);
      const card = page.locator(`#license-${license.key}`);
      expect(await card.locator('code').textContent()).toBe(license.key);
      expect(await card.getByRole('button', { name: 'Copy key' }).isVisible()).toBe(false);
      await card.getByRole('button', { name: 'Reset devices…' }).click();
      await page.getByRole('button', { name: 'Reset devices', exact: true }).click();
      await page.waitForURL(/notice=reset/);
      expect(await card.textContent()).toContain('No device is using this license yet.');
      await closeChromium(noScript);
    }, BROWSER_CASE_TIMEOUT);

    it('delivers messages left in the outbox by a server that stopped before it could send them', async () => {
      // A server whose SMTP relay is down: the message is attempted, refused and stays queued.
      const port = running!.app.server.address() as { port: number };
      const product = await api('POST', '/api/v1/products', { name: 'Restart Pro' });
      await stopApp(running);
      const deadRelay = `smtp://127.0.0.1:${await freePort()}`;
      running = await startApp(database, port.port, deadRelay, 300);
      const license = await api('POST', '/api/v1/licenses', { productId: product.id, type: 'perpetual', maxDevices: 1, email: 'restart@example.com', sendEmail: true });
      const [queued] = await outboxFor(running!.store, 'restart@example.com');
      await expect.poll(async () => (await outboxFor(running!.store, 'restart@example.com'))[0]!.attempts, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      expect(smtp.inbox.some((m) => m.subject === 'Your license key for Restart Pro')).toBe(false);
      await stopApp(running);

      // The restarted server, with the relay reachable again, delivers it.
      running = await startApp(database, port.port, smtpUrl);
      const mail = await smtp.waitFor('restart@example.com', /Your license key for Restart Pro/);
      expect(mail.text).toContain(license.key);
      expect(mail.messageId).toBe(`<${queued!.id}@localhost>`);
      await expect.poll(async () => (await outboxFor(running!.store, 'restart@example.com'))[0]!.status).toBe('done');
      expect(smtp.inbox.filter((m) => m.subject === 'Your license key for Restart Pro')).toHaveLength(1);
    }, BROWSER_CASE_TIMEOUT);
  });
}

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';

const PASSWORD = 'correct horse battery';

// Issue 36 item 3: tick two licenses, revoke them through the confirmation; a forged token is refused.
for (const kind of storeKinds()) {
  describe.skipIf(!available)(`dashboard bulk actions in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let page: Page;
    let accountId: string;
    const keys: string[] = [];

    async function shoot(name: string): Promise<void> {
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-desktop.png`), fullPage: true });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-phone.png`), fullPage: true });
      await page.setViewportSize(DESKTOP);
    }
    const heading = () => page.getByRole('heading', { level: 1 }).textContent();
    const revoked = async () => {
      const list = (await running!.services.licenses.search(cliPrincipal(accountId), { limit: 100 })).data;
      return keys.filter((k) => list.find((l) => l.key === k)!.revoked);
    };

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      running = await startApp(database, await freePort(), await smtp.start());
      const account = await running.services.accounts.create({ email: 'owner@bulk.test', password: PASSWORD, plan: 'plus' });
      accountId = account.id;
      const owner = cliPrincipal(account.id);
      const product = await running.services.products.create(owner, { name: 'Aurora Pro' });
      for (let i = 0; i < 4; i++) {
        const l = await running.services.licenses.create(owner, { productId: product.id, type: 'timed', expiresAt: '2030-01-01', maxDevices: 2, email: `buyer${i}@customer.test` });
        keys.push(l.key);
      }
      context = await launchChromium();
      page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await database?.drop();
    });

    it('revokes exactly the two ticked licenses after a confirmation; a forged token is refused', async () => {
      const base = running!.baseUrl;
      await page.goto(`${base}/dashboard/login`);
      await page.getByLabel('E-mail address').fill('owner@bulk.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.goto(`${base}/dashboard/licenses`);
      expect(await heading()).toBe('Licenses');
      const [a, , c] = keys;

      // A forged token: refused, nothing changed.
      await page.getByLabel(`Select ${a}`).check();
      await page.getByLabel('Action', { exact: true }).selectOption('revoke');
      await page.locator('form#bulk input[name=csrf]').evaluate((el) => ((el as HTMLInputElement).value = 'A'.repeat(43)));
      const forged = page.waitForResponse((r) => r.request().method() === 'POST');
      await page.getByRole('button', { name: 'Apply…' }).click();
      expect((await forged).status()).toBe(403);
      expect(await revoked()).toEqual([]);

      // "Select all on this page" ticks every row (the script; the server adds the page's keys anyway).
      await page.goto(`${base}/dashboard/licenses`);
      await page.getByLabel('Select all on this page').check();
      expect(await page.locator('input[form=bulk][name^="k:"]:checked').count()).toBe(4);
      await page.getByLabel('Select all on this page').uncheck();
      expect(await page.locator('input[form=bulk][name^="k:"]:checked').count()).toBe(0);

      // Two ticked, revoke: the confirmation says how many, then only those two change.
      await page.getByLabel(`Select ${a}`).check();
      await page.getByLabel(`Select ${c}`).check();
      await page.getByLabel('Action', { exact: true }).selectOption('revoke');
      await shoot('licenses-bulk');
      await page.getByRole('button', { name: 'Apply…' }).click();
      expect(await heading()).toBe('Revoke 2 licenses?');
      expect(await revoked()).toEqual([]);
      await shoot('licenses-bulk-confirm');
      await page.getByRole('button', { name: 'Revoke 2 licenses' }).click();
      expect(await heading()).toBe('Bulk action done');
      expect(await page.locator('#bulk-outcome').textContent()).toBe('Revoked 2 licenses.');
      expect(await revoked()).toEqual([a, c]);
      await page.getByRole('link', { name: 'Back to the licenses' }).click();
      expect(await page.locator('.badge.revoked').count()).toBe(2);
    }, BROWSER_CASE_TIMEOUT);

    it('extends once: a second click on the confirmation posts nothing, and reloading the result repeats nothing', async () => {
      const base = running!.baseUrl;
      const b = keys[1]!;
      const expiry = async () => (await running!.services.licenses.get(cliPrincipal(accountId), b)).expiresAt;
      const before = await expiry();
      await page.goto(`${base}/dashboard/licenses`);
      await page.getByLabel(`Select ${b}`).check();
      await page.getByLabel('Action', { exact: true }).selectOption('extend');
      await page.getByLabel('Days (for extend)').fill('10');
      await page.getByRole('button', { name: 'Apply…' }).click();
      expect(await heading()).toBe('Extend 1 license by 10 days?');
      // A slow server: the second click comes while the first post waits for its answer.
      let posts = 0;
      await page.route('**/dashboard/licenses/bulk', async (route) => {
        posts += 1;
        await new Promise((resolve) => setTimeout(resolve, 400));
        await route.continue();
      });
      // Both clicks inside the page (Playwright waits for a pending navigation before acting again).
      await page.getByRole('button', { name: 'Extend 1 license' }).evaluate((b) => {
        (b as HTMLButtonElement).click();
        setTimeout(() => (b as HTMLButtonElement).click(), 100);
      });
      await page.waitForURL(/\/dashboard\/licenses\/bulk\/done\?/);
      expect(await page.locator('#bulk-outcome').textContent()).toBe('Extended 1 license.');
      await page.reload();
      expect(await page.locator('#bulk-outcome').textContent()).toBe('Extended 1 license.');
      expect(posts).toBe(1);
      expect(await expiry()).toBe(before! + 10 * 86_400_000);
      await page.unroute('**/dashboard/licenses/bulk');
    }, BROWSER_CASE_TIMEOUT);
  });
}

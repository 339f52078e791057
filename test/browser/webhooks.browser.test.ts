import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

const PASSWORD = 'correct horse battery';

// Issue 36: edit an endpoint, send it a test event, read an attempt's request and answer.
for (const kind of storeKinds()) {
  describe.skipIf(!available)(`dashboard webhooks in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    let receiver: WebhookReceiver;
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let page: Page;

    async function shoot(name: string): Promise<void> {
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-desktop.png`), fullPage: true });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-phone.png`), fullPage: true });
      await page.setViewportSize(DESKTOP);
    }
    const heading = () => page.getByRole('heading', { level: 1 }).textContent();
    const stored = async () => (await running!.store.read.all(running!.store.db.selectFrom('webhook_endpoints').select(['url', 'events', 'description', 'enabled'])))[0];

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      receiver = await WebhookReceiver.start();
      receiver.fallback = { status: 200, body: '{"received":true}', headers: { 'content-type': 'application/json' } };
      running = await startApp(database, await freePort(), await smtp.start(), undefined, { WEBHOOK_ALLOW_PRIVATE: 'true' });
      context = await launchChromium();
      page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await receiver?.close();
      await database?.drop();
    });

    it('edits an endpoint (refusing bad input and a forged token), sends a test event and shows its request and answer', async () => {
      const base = running!.baseUrl;
      await page.goto(`${base}/dashboard`);
      await page.getByLabel('E-mail address').fill('owner@hooks.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      expect(await heading()).toBe('Overview');

      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
      await page.getByLabel('URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('link', { name: receiver.url }).click();
      expect(await heading()).toBe('Webhook endpoint');

      // Edit: bad input first (no event ticked, a URL that is not http), every message at once, nothing saved.
      await page.getByRole('link', { name: 'Edit', exact: true }).click();
      expect(await heading()).toBe('Edit webhook endpoint');
      const before = await stored();
      await page.getByLabel('URL').fill('ftp://hooks.test/in');
      await page.getByLabel('All events').uncheck();
      await page.getByRole('button', { name: 'Save endpoint' }).click();
      expect(await page.getByText('Events needs at least one choice.').isVisible()).toBe(true);
      expect(await stored()).toEqual(before);
      await shoot('webhook-edit');

      // A forged token: refused, nothing saved.
      await page.getByLabel('URL').fill(receiver.url);
      await page.getByLabel('license.created').check();
      await page.locator('form[action$="/edit"] input[name=csrf]').evaluate((el) => ((el as HTMLInputElement).value = 'A'.repeat(43)));
      const forged = page.waitForResponse((r) => r.request().method() === 'POST');
      await page.getByRole('button', { name: 'Save endpoint' }).click();
      expect((await forged).status()).toBe(403);
      expect(await stored()).toEqual(before);

      // Saved for real: only license.created, a description.
      const endpointUrl = (await running!.store.read.first(running!.store.db.selectFrom('webhook_endpoints').select('id')))!.id;
      await page.goto(`${base}/dashboard/webhooks/${endpointUrl}/edit`);
      await page.getByLabel('All events').uncheck();
      await page.getByLabel('license.created').check();
      await page.getByLabel('Description (optional)').fill('Fulfilment');
      await page.getByRole('button', { name: 'Save endpoint' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Webhook endpoint saved.');
      expect(await stored()).toMatchObject({ url: receiver.url, events: '["license.created"]', description: 'Fulfilment' });

      // A test event, delivered though the endpoint takes only license.created; its attempt in full.
      await page.getByRole('button', { name: 'Send test event' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('A test event (ping) is queued');
      await waitFor(async () => {
        await page.reload();
        return (await page.getByText('succeeded').count()) >= 1;
      });
      await shoot('webhook-endpoint');
      await page.getByRole('link', { name: /^ping/ }).first().click();
      expect(await heading()).toBe('Delivery of ping');
      const headers = page.getByRole('table', { name: 'Request headers of attempt 1' });
      expect(await headers.getByRole('cell', { name: 'tessera-signature' }).isVisible()).toBe(true);
      expect(await page.getByLabel('Response body of attempt 1').textContent()).toBe('{"received":true}');
      expect(await page.locator('pre[aria-label="Request body"]').textContent()).toContain('"type": "ping"');
      await shoot('webhook-delivery');
      expect(receiver.of('ping')).toHaveLength(1);
    }, BROWSER_CASE_TIMEOUT * 2);
  });
}

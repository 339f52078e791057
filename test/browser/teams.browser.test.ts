import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';

const PASSWORD = 'correct horse battery';
const code = (secret: string, steps = 0) => new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: Date.now() + steps * 30_000 });

for (const kind of storeKinds()) {
  describe.skipIf(!available)(`teams and security in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    let database: TestDatabase;
    let running: Running | undefined;
    let owner: BrowserContext;
    let support: BrowserContext;
    let page: Page;

    async function shoot(p: Page, name: string): Promise<void> {
      await p.screenshot({ path: join(SHOTS, `dashboard-${name}-desktop.png`), fullPage: true });
      await p.setViewportSize(PHONE);
      await p.screenshot({ path: join(SHOTS, `dashboard-${name}-phone.png`), fullPage: true });
      await p.setViewportSize(DESKTOP);
    }
    const heading = (p: Page) => p.getByRole('heading', { level: 1 }).textContent();
    async function logIn(p: Page, email: string) {
      await p.goto(`${running!.baseUrl}/dashboard/login`);
      await p.getByLabel('E-mail address').fill(email);
      await p.getByLabel('Password').fill(PASSWORD);
      await p.getByRole('button', { name: 'Log in' }).click();
    }

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      running = await startApp(database, await freePort(), await smtp.start());
      await running.services.accounts.create({ email: 'owner@aurora.test', password: PASSWORD });
      owner = await launchChromium();
      support = await launchChromium();
      page = await owner.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await closeChromium(owner);
      await closeChromium(support);
      await stopApp(running);
      await smtp.stop();
      await database?.drop();
    });

    it('an owner creates a read-only API key with an expiry; bad input is shown beside its field', async () => {
      await logIn(page, 'owner@aurora.test');
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'API keys', exact: true }).click();
      await page.getByLabel('Name').fill('Reports');
      await page.getByLabel('Scope').selectOption('read');
      await page.getByLabel('Expires on').fill('2001-01-01');
      await page.getByRole('button', { name: 'Create API key' }).click();
      expect(await page.locator('#f-expiresAt-error').textContent()).toContain('must be in the future');
      await page.getByLabel('Expires on').fill('2999-01-31');
      await page.getByRole('button', { name: 'Create API key' }).click();
      expect(await page.locator('#new-api-key').textContent()).toMatch(/^sk_/);
      const row = page.getByRole('row', { name: /Reports/ });
      expect(await row.textContent()).toContain('Read only');
      await shoot(page, 'api-keys-scopes');
    }, BROWSER_CASE_TIMEOUT);

    it('invites a support member who joins, fixes a license, and cannot reach payments or API keys; the owner sees who did it', async () => {
      const tenant = (await running!.services.accounts.findByEmail('owner@aurora.test'))!;
      const principal = cliPrincipal(tenant.id);
      const product = await running!.services.products.create(principal, { name: 'Aurora Photo' } as never);
      const license = await running!.services.licenses.create(principal, { productId: product.id, type: 'perpetual', maxDevices: 2 } as never);

      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Members', exact: true }).click();
      expect(await heading(page)).toBe('Members');
      await page.getByLabel('E-mail address').fill('not an address');
      await page.getByRole('button', { name: 'Send the invitation' }).click();
      expect(await page.locator('#f-email-error').isVisible()).toBe(true);
      await page.getByLabel('E-mail address').fill('help@aurora.test');
      await page.getByLabel('Role').selectOption('support');
      await page.getByRole('button', { name: 'Send the invitation' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Invitation sent');
      await shoot(page, 'members');

      const mail = await smtp.waitFor('help@aurora.test', /invited/);
      const link = /http:\/\/[^\s]+\/dashboard\/invitation\?token=[A-Za-z0-9_-]+/.exec(mail.text ?? '')![0];
      const helper = await support.newPage();
      await helper.setViewportSize(DESKTOP);
      await helper.goto(link);
      expect(await heading(helper)).toBe('Join the dashboard');
      await helper.getByLabel('Choose a password').fill(PASSWORD);
      await helper.getByRole('button', { name: 'Join' }).click();
      expect(await heading(helper)).toBe('Overview');
      const links = await helper.getByRole('navigation', { name: 'Dashboard' }).getByRole('link').allTextContents();
      expect(links).toContain('Licenses');
      expect(links).not.toContain('Payments');
      expect(links).not.toContain('API keys');
      await helper.goto(`${running!.baseUrl}/dashboard/payments`);
      expect(await heading(helper)).toBe('Not allowed');
      await helper.goto(`${running!.baseUrl}/dashboard/licenses/${license.key}`);
      await helper.getByRole('button', { name: 'Revoke…' }).click();
      await helper.getByRole('button', { name: 'Revoke license' }).click();
      await page.goto(`${running!.baseUrl}/dashboard/licenses/${license.key}`);
      expect(await page.getByRole('table', { name: 'Audit log' }).textContent()).toContain('Dashboard (help@aurora.test)');
    }, BROWSER_CASE_TIMEOUT);

    it('turns on two-factor sign-in with the QR code page; the next sign-in asks for a code; a wrong one is refused', async () => {
      await page.goto(`${running!.baseUrl}/dashboard/account/two-factor`);
      await page.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
      expect(await page.getByRole('img', { name: 'QR code for your authenticator app' }).isVisible()).toBe(true);
      await shoot(page, 'two-factor-setup');
      const secret = (await page.locator('#totp-secret').textContent())!;
      await page.getByLabel('Code from your app').fill(code(secret, -1));
      await page.getByRole('button', { name: 'Turn on' }).click();
      expect(await page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').count()).toBe(10);
      await page.getByRole('button', { name: 'Log out' }).click();
      await logIn(page, 'owner@aurora.test');
      expect(await heading(page)).toBe('Two-factor sign-in');
      await page.getByLabel('Code').fill('000000' === code(secret) ? '111111' : '000000');
      await page.getByRole('button', { name: 'Continue' }).click();
      expect(await page.locator('#f-code-error').textContent()).toContain('not right');
      await shoot(page, 'two-factor-code');
      await page.getByLabel('Code').fill(code(secret));
      await page.getByRole('button', { name: 'Continue' }).click();
      expect(await heading(page)).toBe('Overview');
    }, BROWSER_CASE_TIMEOUT);

    it("a removed member's session ends at their next click", async () => {
      await page.goto(`${running!.baseUrl}/dashboard/members`);
      await page.getByRole('button', { name: 'Remove help@aurora.test…' }).click();
      await page.getByRole('button', { name: 'Remove member' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Member removed');
      const helper = support.pages()[0]!;
      await helper.goto(`${running!.baseUrl}/dashboard/licenses`);
      expect(await heading(helper)).toBe('Log in');
      expect(await helper.getByText('Your session has ended').isVisible()).toBe(true);
    }, BROWSER_CASE_TIMEOUT);
  });
}

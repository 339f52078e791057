import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { signedEvent, StripeDouble, stripeObjects } from '../support/stripe-double.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { waitFor } from '../support/wait.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';

const PASSWORD = 'correct horse battery';

for (const kind of storeKinds()) {
  describe.skipIf(!available)(`dashboard in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    const double = new StripeDouble();
    let receiver: WebhookReceiver;
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let page: Page;

    /** Desktop and phone pictures of the page as it is now (kept in docs/screenshots with UPDATE_SCREENSHOTS=1). */
    async function shoot(name: string): Promise<void> {
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-desktop.png`), fullPage: true });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}-phone.png`), fullPage: true });
      await page.setViewportSize(DESKTOP);
    }

    const heading = () => page.getByRole('heading', { level: 1 }).textContent();
    const nav = (name: string) => page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true }).click();

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      await double.start();
      receiver = await WebhookReceiver.start();
      // Stripe is the double; the webhook receiver is on loopback (allowed here only).
      running = await startApp(database, await freePort(), await smtp.start(), undefined, { STRIPE_API_URL: double.url, WEBHOOK_ALLOW_PRIVATE: 'true' });
      context = await launchChromium();
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: running.baseUrl });
      page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await double.stop();
      await receiver?.close();
      await database?.drop();
    });

    it('takes a new operator from setup to a product ready to sell, and back out', async () => {
      const base = running!.baseUrl;
      // First run: the setup page, then log out and in again.
      await page.goto(`${base}/dashboard`);
      expect(await heading()).toBe('Set up Tessera');
      await shoot('setup');
      await page.getByLabel('E-mail address').fill('owner@aurora.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      expect(await heading()).toBe('Overview');
      await page.getByRole('button', { name: 'Log out' }).click();
      expect(await heading()).toBe('Log in');
      await page.getByLabel('E-mail address').fill('owner@aurora.test');
      await page.getByLabel('Password').fill('not my password');
      await page.getByRole('button', { name: 'Log in' }).click();
      expect(await page.getByRole('alert').textContent()).toContain('The e-mail address or the password is not right.');
      await shoot('login');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      expect(await heading()).toBe('Overview');
      expect(await page.getByRole('link', { name: 'Create a product' }).isVisible()).toBe(true);
      await shoot('overview-empty');

      // A product, then its customization.
      await nav('Products');
      expect(await page.getByText('You have no products yet.').isVisible()).toBe(true);
      await page.getByRole('link', { name: 'Create your first product' }).click();
      await page.getByLabel('Name', { exact: true }).fill('Aurora Photo');
      await page.getByLabel('Description').fill('Fast, private photo editing.');
      await page.getByLabel('Support e-mail').fill('support@aurora.test');
      await page.getByRole('button', { name: 'Create product' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Product created.');
      expect(await heading()).toBe('Aurora Photo');
      await page.getByLabel('Note to customers').fill('Download the installer and paste your key.');
      await page.getByLabel('Button text').fill('Download');
      await page.getByLabel('Button link').fill('https://aurora.test/download?key={key}');
      await page.getByLabel('Customers may reset their devices in the portal').uncheck();
      await page.getByLabel('Resets allowed per license').fill('0');
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await page.getByText('Resets allowed per license must be at least 1.').isVisible()).toBe(true);
      await page.getByLabel('Resets allowed per license').fill('2');
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Changes saved.');
      expect(await page.getByLabel('Customers may reset their devices in the portal').isChecked()).toBe(false);
      expect(await page.getByLabel('Button link').inputValue()).toBe('https://aurora.test/download?key={key}');
      await shoot('product');

      // License tokens: turn them on, copy the public key.
      await page.getByRole('link', { name: 'License tokens' }).click();
      await page.getByLabel('Issue license tokens on activation').check();
      await page.getByRole('button', { name: 'Save settings' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Token settings saved.');
      const pem = (await page.locator('#public-key-pem').textContent())!;
      expect(pem).toContain('-----BEGIN PUBLIC KEY-----');
      await page.getByRole('button', { name: 'Copy PEM' }).click();
      await page.getByText('Public key (PEM) copied to the clipboard.').waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(pem);
      const jwk = JSON.parse((await page.locator('#public-key-jwk').textContent())!);
      expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
      await shoot('tokens');

      // A license, by hand.
      await nav('Licenses');
      await page.getByRole('link', { name: 'New license' }).click();
      await page.getByLabel('Type').selectOption('timed');
      await page.getByLabel('Expires on').fill('2031-06-30');
      await page.getByLabel('Devices allowed').fill('2');
      await page.getByLabel("Customer's e-mail").fill('customer@example.com');
      await page.getByRole('button', { name: 'Create license' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('License created.');
      const key = (await page.locator('.key-text').first().textContent())!.trim();
      expect(key).toMatch(/^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$/);

      // An API key, shown once, used against the server API (it activates a device for the license).
      await nav('API keys');
      expect(await page.getByText('No API keys yet.').isVisible()).toBe(true);
      await page.getByLabel('Name').fill('Web shop');
      await page.getByRole('button', { name: 'Create API key' }).click();
      const secret = (await page.locator('#new-api-key').textContent())!;
      expect(secret).toMatch(/^sk_/);
      await shoot('api-keys');
      const products = await (await fetch(`${base}/api/v1/products`, { headers: { authorization: `Bearer ${secret}` } })).json();
      expect(products.data?.[0]?.name ?? products[0]?.name).toBe('Aurora Photo');
      const pid = (products.data?.[0] ?? products[0]).id as string;
      for (const [identifier, name] of [['mac-1', 'MacBook Pro'], ['pc-2', 'Studio PC']]) {
        const res = await fetch(`${base}/api/v1/public/licenses/activate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ licenseKey: key, productId: pid, deviceIdentifier: identifier, deviceName: name }),
        });
        expect(res.status).toBe(200);
      }
      // The list shows the key's last use (recorded in the background after the request).
      await waitFor(async () => {
        await page.goto(`${base}/dashboard/api-keys`);
        // The sixth column is the last use (the fourth, the expiry, also says "Never" for a key that does not expire).
        return (await page.locator('tbody tr td:nth-child(6)', { hasText: 'Never' }).count()) === 0;
      });

      // Find the license by e-mail, revoke it (asked first), remove a device (asked first).
      await nav('Licenses');
      await page.getByLabel('Key, e-mail or device').fill('CUSTOMER@example.com');
      await page.getByRole('button', { name: 'Search' }).click();
      await shoot('licenses');
      await page.getByRole('link', { name: key }).click();
      expect(await page.getByRole('cell', { name: 'MacBook Pro', exact: true }).isVisible()).toBe(true);
      await shoot('license');
      await page.getByRole('button', { name: 'Revoke…' }).click();
      expect(await heading()).toBe('Revoke this license?');
      await shoot('confirm');
      await page.getByRole('button', { name: 'Revoke license' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('License revoked.');
      expect(await page.locator('.badge').first().textContent()).toBe('Revoked');
      await page.getByRole('button', { name: 'Remove MacBook Pro…' }).click();
      expect(await heading()).toBe('Remove MacBook Pro?');
      await page.getByRole('link', { name: 'Cancel' }).click();
      expect(await page.getByRole('cell', { name: 'MacBook Pro', exact: true }).isVisible()).toBe(true);
      await page.getByRole('button', { name: 'Remove MacBook Pro…' }).click();
      await page.getByRole('button', { name: 'Remove device' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Device removed.');
      expect(await page.getByRole('cell', { name: 'MacBook Pro', exact: true }).count()).toBe(0);
      expect(await page.getByRole('cell', { name: 'Studio PC', exact: true }).isVisible()).toBe(true);

      // CSV export of the filtered list.
      await nav('Licenses');
      const download = page.waitForEvent('download');
      await page.getByRole('link', { name: 'Export CSV' }).click();
      const csv = readFileSync((await (await download).path())!, 'utf8');
      expect(csv.split('\r\n')[0]).toContain('active_devices');
      expect(csv).toContain(`${key},${pid},Aurora Photo,customer@example.com,timed,revoked,2031-06-30T00:00:00.000Z,2,1,`);

      // A private portal link, opened.
      await nav('Portal');
      await page.getByLabel("Customer's e-mail").fill('customer@example.com');
      await page.getByRole('button', { name: 'Create link' }).click();
      const url = (await page.locator('#portal-link').textContent())!;
      expect(url).toContain('/portal?token=');
      await shoot('portal');
      const customer = await context.newPage();
      await customer.goto(url);
      expect(await customer.getByRole('heading', { name: 'Aurora Photo' }).isVisible()).toBe(true);
      expect(await customer.getByText(key).first().isVisible()).toBe(true);
      await customer.close();

      // Activity, account; the API key revoked (asked first) stops working.
      await nav('Activity');
      expect(await page.getByRole('img').first().getAttribute('aria-label')).toContain('2 activations');
      await shoot('activity');
      await nav('Account');
      await page.getByLabel('New e-mail address').fill('sales@aurora.test');
      await page.getByLabel('Your password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Send the confirmation link' }).click();
      expect(await page.getByText('A confirmation link is on its way to the new address.').isVisible()).toBe(true);
      expect(await page.getByText('Waiting for sales@aurora.test to confirm').isVisible()).toBe(true);
      await shoot('account');
      await nav('API keys');
      await page.getByRole('button', { name: 'Revoke Web shop…' }).click();
      await page.getByRole('button', { name: 'Revoke API key' }).click();
      expect((await fetch(`${base}/api/v1/products`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(403);
      await nav('Overview');
      await shoot('overview');
    }, BROWSER_CASE_TIMEOUT * 2);

    it('sells through Stripe (the double), tells a webhook endpoint, and keeps the audit log of a license', async () => {
      const base = running!.baseUrl;
      // Connect: a refused key shows Stripe's message in the form; a good one connects.
      await nav('Payments');
      expect(await heading()).toBe('Payments');
      expect(await page.getByText('Stripe is not connected.').isVisible()).toBe(true);
      await page.getByLabel('Restricted key').fill('rk_test_notakeystripeknows');
      await page.getByRole('button', { name: 'Connect Stripe' }).click();
      expect(await page.getByText('Invalid API Key provided').isVisible()).toBe(true);
      const key = double.account();
      await page.getByLabel('Restricted key').fill(key);
      await page.getByRole('button', { name: 'Connect Stripe' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Stripe is connected.');
      expect(await page.content()).not.toContain(key);

      // Map a price: timed, a year from purchase, 3 devices per unit.
      const priceId = double.price(key, 'price_aurora_pro_year', 4900);
      await page.getByLabel('Stripe price ID').fill(priceId);
      await page.getByLabel('Devices per unit bought').fill('3');
      await page.getByLabel('License', { exact: true }).selectOption('offset');
      await page.getByLabel('Days until expiry (timed, days after purchase)').fill('365');
      await page.getByRole('button', { name: 'Map price' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Price mapped.');
      expect(await page.getByRole('cell', { name: 'Expires 365 days after purchase' }).isVisible()).toBe(true);

      // A webhook endpoint, its secret shown once (copied), before the purchase so it hears of it.
      await nav('Webhooks');
      expect(await heading()).toBe('Webhooks');
      expect(await page.getByText('No webhook endpoints yet.').isVisible()).toBe(true);
      await page.getByLabel('URL').fill(receiver.url);
      expect(await page.getByLabel('All events').isChecked()).toBe(true);
      await page.getByLabel('Description (optional)').fill('Fulfilment server');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = (await page.locator('#new-webhook-secret').textContent())!;
      expect(secret).toMatch(/^whsec_/);
      await page.getByRole('button', { name: 'Copy secret' }).click();
      await page.getByText('Signing secret copied to the clipboard.').waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
      await shoot('webhooks');
      await nav('Webhooks');
      expect(await page.content()).not.toContain(secret);

      // Stripe reports a paid checkout (signed with the endpoint's secret): the purchase appears.
      const endpoint = [...double.endpoints.values()].at(-1)!;
      const invoice = double.invoice(key);
      const event = signedEvent(endpoint.secret, 'checkout.session.completed', stripeObjects.checkoutSession({ id: double.session(key, [{ priceId }]), email: 'buyer@aurora.test', invoice }));
      const delivered = await fetch(endpoint.url, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': event.header }, body: event.payload });
      expect(delivered.status).toBe(200);
      await nav('Payments');
      await shoot('payments');
      // Purchases have their own page (the purchases area: support reaches it, payments' keys stay hidden).
      await nav('Purchases');
      expect(await heading()).toBe('Purchases');
      expect(await page.getByRole('cell', { name: 'buyer@aurora.test' }).isVisible()).toBe(true);
      expect(await page.getByRole('cell', { name: '$49.00' }).isVisible()).toBe(true);
      await shoot('purchases');
      // "Download invoice" fetches the invoice from Stripe now and redirects to its PDF.
      const href = (await page.getByRole('link', { name: 'Download invoice' }).getAttribute('href'))!;
      const redirect = await page.request.get(`${base}${href}`, { maxRedirects: 0 });
      expect(redirect.status()).toBe(303);
      expect(redirect.headers().location).toMatch(/^https:\/\/pay\.stripe\.com\/invoice\/.+\/pdf$/);

      // The bought license: revoked from the dashboard; its audit log names the purchase and the operator.
      await page.locator('td a.key-text').first().click();
      expect(await heading()).toBe('License');
      await page.getByRole('button', { name: 'Revoke…' }).click();
      await page.getByRole('button', { name: 'Revoke license' }).click();
      const audit = page.getByRole('table', { name: 'Audit log' });
      expect(await audit.getByRole('row').nth(1).getByRole('cell').nth(1).textContent()).toBe('Revoked');
      expect(await audit.getByRole('cell', { name: 'Dashboard (owner@aurora.test)' }).isVisible()).toBe(true);
      expect(await audit.getByRole('cell', { name: 'Purchase (stripe)' }).isVisible()).toBe(true);
      await shoot('license-audit');

      // The endpoint's deliveries: the purchase and the license changes, each with its attempts; one redelivered.
      await nav('Webhooks');
      await page.getByRole('link', { name: receiver.url }).click();
      expect(await heading()).toBe('Webhook endpoint');
      await waitFor(async () => {
        await page.reload();
        return (await page.getByText('succeeded').count()) >= 3;
      });
      expect(await page.getByRole('cell', { name: 'purchase.completed' }).isVisible()).toBe(true);
      await page.getByText('Attempts (1)').first().click();
      expect(await page.getByRole('cell', { name: '200', exact: true }).first().isVisible()).toBe(true);
      await shoot('webhook-deliveries');
      await page.getByRole('button', { name: 'Redeliver' }).first().click();
      expect(await page.getByRole('status').first().textContent()).toContain('queued for delivery again');
    }, BROWSER_CASE_TIMEOUT * 2);

    it('shows the business at a glance and the account-wide audit log, warns before a risky save, and answers a lost page', async () => {
      const base = running!.baseUrl;
      await page.goto(`${base}/`);
      expect(await heading()).toBe('Overview');
      const glance = page.getByRole('region', { name: 'At a glance' });
      expect(await glance.textContent()).toMatch(/Licenses\s*[1-9]/);
      expect(await glance.textContent()).toContain('Revenue in');
      expect(await page.getByRole('table', { name: 'Latest changes' }).getByRole('row').count()).toBeGreaterThan(1);
      await shoot('overview');

      await nav('Audit log');
      expect(await heading()).toBe('Audit log');
      await page.getByLabel('Change').selectOption('license.revoked');
      await page.getByRole('button', { name: 'Filter' }).click();
      const log = page.getByRole('table', { name: 'Audit log' });
      const changes = await log.locator('tbody tr td:nth-child(2)').allTextContents();
      expect(changes.length).toBeGreaterThan(0);
      expect(new Set(changes)).toEqual(new Set(['Revoked']));
      await shoot('audit-log');

      // Every wrong field at once, in the label's words; then a past expiry asks before saving.
      await log.locator('a.key-text').first().click();
      expect(await heading()).toBe('License');
      await page.getByLabel('Type').selectOption('timed');
      await page.getByLabel('Expires on').fill('');
      await page.getByLabel('Devices allowed').fill('0');
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await page.getByText('2 fields need a fix').isVisible()).toBe(true);
      expect(await page.getByText('Expires on is required for a timed license.').isVisible()).toBe(true);
      expect(await page.getByText('Devices allowed must be at least 1.').isVisible()).toBe(true);
      await shoot('form-errors');
      await page.getByLabel('Expires on').fill('2021-03-04');
      await page.getByLabel('Devices allowed').fill('2');
      await page.getByRole('button', { name: 'Save changes' }).click();
      expect(await heading()).toBe('Save these changes anyway?');
      expect(await page.textContent('main')).toContain('The expiry date 2021-03-04 is in the past');
      await shoot('save-warning');
      await page.getByRole('button', { name: 'Save anyway' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Changes saved.');

      // A mistyped address: a page with a way back, not JSON.
      const lost = await page.goto(`${base}/dashbord`);
      expect(lost!.status()).toBe(404);
      expect(await heading()).toBe('Page not found');
      await page.getByRole('link', { name: 'Go to the dashboard' }).click();
      expect(await heading()).toBe('Overview');

      // The first account administers the installation.
      await nav('Account');
      await page.getByRole('link', { name: 'Manage the accounts of this installation' }).click();
      expect(await heading()).toBe('Accounts of this installation');
      await shoot('instance-accounts');
    }, BROWSER_CASE_TIMEOUT);
  });
}

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { available, BROWSER_CASE_TIMEOUT, closeChromium, DESKTOP, freePort, launchChromium, PHONE, type Running, SHOTS, startApp, stopApp } from '../support/browser.ts';
import { TestSmtpServer } from '../support/smtp.ts';
import { signedEvent, StripeDouble, stripeObjects } from '../support/stripe-double.ts';
import { createTestDatabase, storeKinds, type TestDatabase } from '../support/stores.ts';

const PASSWORD = 'correct horse battery';
const DAY = 86_400_000;

/**
 * The license lifecycle in Chromium (issue 34): a product's offers in the dashboard (an upgrade with
 * entitlements, a wrong code refused), a subscribed license's subscription and its unlinking, and the
 * portal's offer and "Manage subscription" forms, which send the customer to Stripe (the double's
 * URLs, answered here by a stand-in page: the test has no network).
 */
for (const kind of storeKinds()) {
  describe.skipIf(!available)(`license lifecycle in Chromium [${kind}]`, () => {
    const smtp = new TestSmtpServer();
    const double = new StripeDouble();
    let database: TestDatabase;
    let running: Running | undefined;
    let context: BrowserContext;
    let page: Page;
    let auth: Record<string, string>;
    let stripeKey: string;
    let endpoint: { url: string; secret: string };

    const api = async (method: 'POST' | 'PUT' | 'GET', url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await running!.app.inject({ method, url, headers: { ...auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, payload: body === undefined ? undefined : JSON.stringify(body) });
      if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.body ? JSON.parse(res.body) : undefined;
    };
    const deliver = async (type: string, object: unknown) => {
      const event = signedEvent(endpoint.secret, type, object);
      const res = await fetch(endpoint.url, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': event.header }, body: event.payload });
      expect(res.status).toBe(200);
    };
    const heading = () => page.getByRole('heading', { level: 1 }).textContent();
    async function shoot(name: string): Promise<void> {
      await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true });
      await page.setViewportSize(DESKTOP);
    }

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      await double.start();
      running = await startApp(database, await freePort(), await smtp.start(), undefined, { STRIPE_API_URL: double.url });
      const account = await running.services.accounts.create({ email: 'owner@aurora.test', password: PASSWORD, plan: 'plus' });
      auth = { authorization: `Bearer ${(await running.services.apiKeys.create(cliPrincipal(account.id), 'browser test')).secret}` };
      stripeKey = double.account();
      const connected = await api('PUT', '/api/v1/payments/stripe', { restrictedKey: stripeKey });
      endpoint = double.endpoints.get(connected.webhookEndpointId)!;
      context = await launchChromium();
      // Stripe's hosted pages are out of reach here: a stand-in answers them, so the redirect is seen to land.
      await context.route(/^https:\/\/(checkout|billing)\.stripe\.com\//, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>Stripe (stand-in)</h1>' }));
      page = await context.newPage();
      await page.setViewportSize(DESKTOP);
      mkdirSync(SHOTS, { recursive: true });
      await page.goto(`${running.baseUrl}/dashboard/login`);
      await page.getByLabel('E-mail address').fill('owner@aurora.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
    });

    afterAll(async () => {
      await closeChromium(context);
      await stopApp(running);
      await smtp.stop();
      await double.stop();
      await database?.drop();
    });

    it("adds an upgrade with entitlements on a product's Offers page (a wrong code is named in the form, nothing stored), lists and removes it", async () => {
      const product = await api('POST', '/api/v1/products', { name: 'Aurora Photo' });
      await api('POST', '/api/v1/products', { name: 'Aurora Photo Studio' });
      await page.goto(`${running!.baseUrl}/dashboard/products/${product.id}`);
      await page.getByRole('link', { name: 'Offers', exact: true }).click();
      expect(await heading()).toBe('Renewals and upgrades');
      expect(await page.getByText('No offers yet.').isVisible()).toBe(true);

      await page.getByLabel('Kind').selectOption('upgrade');
      await page.getByLabel('Name shown to the customer').fill('Studio features');
      await page.getByLabel('Stripe price ID').fill('price_studio_features');
      await page.getByLabel('Upgrade: move to product').selectOption({ label: 'Aurora Photo Studio' });
      await page.getByLabel('Upgrade: entitlements').fill('raw-export Layers');
      await page.getByRole('button', { name: 'Add offer' }).click();
      const field = page.getByLabel('Upgrade: entitlements');
      expect(await field.getAttribute('aria-invalid')).toBe('true');
      expect(await field.inputValue()).toBe('raw-export Layers');
      expect(await page.getByText('Upgrade: entitlements is not in the expected format.').isVisible()).toBe(true);
      expect(await api('GET', `/api/v1/products/${product.id}/offers`)).toEqual([]);
      await shoot('dashboard-offers-errors');

      await field.fill('raw-export, layers');
      await page.getByRole('button', { name: 'Add offer' }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Offer added');
      const row = page.getByRole('table', { name: 'Offers' }).getByRole('row', { name: /Studio features/ });
      expect(await row.textContent()).toContain('Upgrade: to Aurora Photo Studio, entitlements: raw-export layers');
      const [offer] = await api('GET', `/api/v1/products/${product.id}/offers`);
      expect(offer.upgrade).toMatchObject({ entitlements: ['raw-export', 'layers'] });
      await shoot('dashboard-offers');

      await row.getByRole('button', { name: /Remove/ }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Offer removed.');
      expect(await page.getByText('No offers yet.').isVisible()).toBe(true);
    }, BROWSER_CASE_TIMEOUT);

    it("shows a subscribed license's subscription and unlinks it after asking", async () => {
      const product = await api('POST', '/api/v1/products', { name: 'Nimbus Sync' });
      const price = double.price(stripeKey);
      await api('POST', `/api/v1/products/${product.id}/prices`, { priceId: price, billing: 'subscription', licenseType: 'timed', maxDevices: 2 });
      const sub = double.subscription(stripeKey, { items: [{ priceId: price }] });
      await deliver('checkout.session.completed', stripeObjects.subscriptionCheckout({ id: `cs_test_browser_${kind}`, subscription: sub.id, email: 'subscriber@example.com' }));
      const listed = await api('GET', `/api/v1/products/${product.id}/licenses`);
      const [license] = Array.isArray(listed) ? listed : listed.data;
      await page.goto(`${running!.baseUrl}/dashboard/licenses/${license.key}`);
      expect(await heading()).toBe('License');
      const fact = page.locator('dt', { hasText: 'Subscription' }).locator('xpath=following-sibling::dd');
      expect(await fact.textContent()).toContain(`${sub.id} (stripe) · active`);
      await page.getByRole('button', { name: 'Unlink subscription…' }).click();
      expect(await page.getByText('Later payments, plan changes and cancellations of the subscription no longer change this license').isVisible()).toBe(true);
      await page.getByRole('button', { name: 'Unlink subscription', exact: true }).click();
      expect(await page.getByRole('status').first().textContent()).toContain('Unlinked: the subscription no longer changes this license.');
      expect(await page.locator('dt', { hasText: 'Subscription' }).count()).toBe(0);
      expect((await api('GET', '/api/v1/licenses', undefined, { 'license-key': license.key })).subscription).toBeNull();
    }, BROWSER_CASE_TIMEOUT);

    it("lets the customer choose an offer and manage a subscription in the portal, each landing at Stripe", async () => {
      const product = await api('POST', '/api/v1/products', { name: 'Comet Notes' });
      const renewal = double.price(stripeKey);
      await api('POST', `/api/v1/products/${product.id}/offers`, { kind: 'renewal', name: 'Renew for a year', priceId: renewal, extendDays: 365 });
      await api('POST', `/api/v1/products/${product.id}/offers`, { kind: 'upgrade', name: 'Pro features', priceId: double.price(stripeKey), entitlements: ['pro'] });
      const email = `customer-${kind}@example.com`;
      const license = await api('POST', '/api/v1/licenses', { productId: product.id, type: 'timed', expiresAt: new Date(Date.now() + 10 * DAY).toISOString(), maxDevices: 1, email });
      const subPrice = double.price(stripeKey);
      await api('POST', `/api/v1/products/${product.id}/prices`, { priceId: subPrice, billing: 'subscription', licenseType: 'timed', maxDevices: 1 });
      const sub = double.subscription(stripeKey, { items: [{ priceId: subPrice }] });
      await deliver('checkout.session.completed', stripeObjects.subscriptionCheckout({ id: `cs_test_portal_${kind}`, subscription: sub.id, email }));

      const { url } = await api('POST', '/api/v1/portal/sessions/private', { email });
      await page.goto(url);
      const card = page.locator(`#license-${license.key}`);
      expect(await card.getByRole('heading', { name: 'Renew or upgrade' }).isVisible()).toBe(true);
      expect(await card.getByRole('button', { name: 'Pro features' }).isVisible()).toBe(true);
      await shoot('portal-offers');
      await card.getByRole('button', { name: 'Renew for a year' }).click();
      await page.waitForURL(/^https:\/\/checkout\.stripe\.com\/c\/pay\//);
      const created = double.calls('POST', '/v1/checkout/sessions').at(-1)!;
      expect(created.form.get('line_items[0][price]')).toBe(renewal);
      expect(created.form.get('metadata[tessera_license_key]')).toBe(license.key);

      await page.goto(`${running!.baseUrl}/portal`);
      const subscribed = page.locator('[id^="license-"]').filter({ has: page.getByRole('button', { name: 'Manage subscription' }) });
      expect(await subscribed.count()).toBe(1);
      await subscribed.getByRole('button', { name: 'Manage subscription' }).click();
      await page.waitForURL(/^https:\/\/billing\.stripe\.com\/p\/session\//);
      expect(double.calls('POST', '/v1/billing_portal/sessions').at(-1)!.form.get('customer')).toBe(sub.customer);
    }, BROWSER_CASE_TIMEOUT);
  });
}

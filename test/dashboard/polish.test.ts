import { describe, expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { activateDevice } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

forEachStore('dashboard polish', (kind) => {
  const ctx = useTestApp(kind);

  describe('addresses a new user types', () => {
    it('sends / to the dashboard', async () => {
      const res = await call(ctx, { method: 'GET', url: '/', headers: BROWSER });
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe('/dashboard');
    });

    it('answers an unknown page to a browser with an HTML 404 in the look of its part of the site', async () => {
      for (const [url, link] of [
        ['/nothing-here', '/dashboard'],
        ['/dashboard/nothing-here', '/dashboard'],
        ['/portal/nothing-here', '/portal/request'],
      ] as const) {
        const res = await call(ctx, { method: 'GET', url, headers: BROWSER });
        expect(res.status, url).toBe(404);
        expect(res.headers['content-type'], url).toMatch(/^text\/html/);
        expect(res.headers['content-security-policy'], url).toContain("default-src 'none'");
        expect(res.body, url).toContain('<h1>Page not found</h1>');
        expect(res.body, url).toContain(`href="${link}"`);
      }
    });

    it('keeps the JSON 404 for API clients and for every /api/ path, whatever they accept', async () => {
      for (const [url, headers] of [
        ['/nothing-here', { accept: 'application/json' }],
        ['/nothing-here', {}],
        ['/api/v1/nothing', BROWSER],
        ['/api/v1/nothing', { accept: '*/*' }],
      ] as const) {
        const res = await call(ctx, { method: 'GET', url, headers });
        expect(res.status, url).toBe(404);
        expect(res.headers['content-type'], url).toMatch(/^application\/json/);
        expect(res.body, url).toEqual({ error: { code: 'not_found', message: 'Not found.' } });
      }
      const post = await call(ctx, { method: 'POST', url: '/nothing-here', headers: BROWSER, payload: '' });
      expect(post.headers['content-type']).toMatch(/^application\/json/);
    });
  });

  describe('license form', () => {
    it('shows every wrong field at once, in the words of its label, and stores nothing', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', '/dashboard/licenses/new');
      const res = await browser.request('POST', '/dashboard/licenses/new', { productId: product.id, type: 'timed', expiresAt: '', maxDevices: '0', email: 'nope', csrf: browser.csrf });
      expect(res.status).toBe(400);
      const text = textOf(res.body);
      expect(text).toContain('3 fields need a fix');
      expect(text).toContain('Expires on is required for a timed license.');
      expect(text).toContain('Devices allowed must be at least 1.');
      expect(text).toContain('e-mail must be a valid e-mail address');
      expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/licenses`, headers: t.auth })).body.data).toEqual([]);
    });

    it('warns before saving an expiry date in the past, and saves it once confirmed', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', '/dashboard/licenses/new');
      const fields = { productId: product.id, type: 'timed', expiresAt: '2020-01-01', maxDevices: '1', email: '' };
      const warned = await browser.request('POST', '/dashboard/licenses/new', { ...fields, csrf: browser.csrf });
      expect(warned.status).toBe(200);
      expect(textOf(warned.body)).toContain('The expiry date 2020-01-01 is in the past');
      expect(warned.body).toContain('name="confirm" value="yes"');
      expect(warned.body).toContain('name="expiresAt" value="2020-01-01"');
      expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/licenses`, headers: t.auth })).body.data).toEqual([]);
      const saved = await browser.request('POST', '/dashboard/licenses/new', { ...fields, confirm: 'yes', csrf: browser.csrf });
      expect(saved.status).toBe(303);
      const [license] = (await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/licenses`, headers: t.auth })).body.data;
      expect(license.expiresAt).toBe('2020-01-01T00:00:00.000Z');
    });

    it('warns before allowing fewer devices than are active; an unchanged past expiry does not warn again', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const license = await createLicense(ctx, t, product.id, { maxDevices: 3 });
      for (const id of ['d1', 'd2', 'd3']) expect((await activateDevice(ctx, t.auth, license.key, product.id, id)).status).toBe(200);
      const browser = await signIn(ctx, t.email);
      const page = `/dashboard/licenses/${license.key}`;
      await browser.request('GET', page);
      const fields = { type: 'perpetual', expiresAt: '', maxDevices: '1', email: '' };
      const warned = await browser.request('POST', page, { ...fields, csrf: browser.csrf });
      expect(warned.status).toBe(200);
      expect(textOf(warned.body)).toContain('3 devices are active and 1 would be allowed');
      expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } })).body.maxDevices).toBe(3);
      expect((await browser.request('POST', page, { ...fields, confirm: 'yes', csrf: browser.csrf })).status).toBe(303);
      expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } })).body.maxDevices).toBe(1);

      const expired = await createLicense(ctx, t, product.id, { type: 'timed', expiresAt: '2020-01-01', maxDevices: 1 });
      const expiredPage = `/dashboard/licenses/${expired.key}`;
      await browser.request('GET', expiredPage);
      const same = await browser.request('POST', expiredPage, { type: 'timed', expiresAt: '2020-01-01', maxDevices: '2', email: '', csrf: browser.csrf });
      expect(same.status).toBe(303);
    });

    it('refuses the warning page without the CSRF token', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t);
      const browser = await signIn(ctx, t.email);
      const res = await browser.request('POST', '/dashboard/licenses/new', { productId: product.id, type: 'timed', expiresAt: '2020-01-01', maxDevices: '1', confirm: 'yes' });
      expect(res.status).toBe(403);
      expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/licenses`, headers: t.auth })).body.data).toEqual([]);
    });
  });
});

import { describe, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { multipartBody as multipart } from '../support/dashboard-forms.ts';
import { PNG } from '../support/images.ts';
import { activateDevice } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

const XSS = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`;

forEachStore('dashboard screens', (kind) => {
  const ctx = useTestApp(kind, { env: { SIGNUP: 'open' } });

  it('renders hostile text inert on every screen it appears on', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', '/dashboard/products/new');
    const created = await browser.request('POST', '/dashboard/products/new', {
      name: XSS,
      description: XSS,
      purchaseNote: XSS,
      actionButtonText: XSS.slice(0, 90),
      portalDeviceResetLimit: '3',
      portalDeviceResetWindowDays: '30',
      csrf: browser.csrf,
    });
    expect(created.status).toBe(303);
    const productId = /\/dashboard\/products\/([^?]+)/.exec(created.headers.location as string)![1]!;
    const license = await createLicense(ctx, t, productId, { email: 'x@example.com' });
    const device = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...t.auth, 'license-key': license.key }, json: { productId, device: { identifier: XSS.slice(0, 90), name: XSS.slice(0, 60) } } });
    expect(device.status).toBe(200);
    await browser.request('GET', '/dashboard/api-keys');
    await browser.request('POST', '/dashboard/api-keys', { name: XSS.slice(0, 90), csrf: browser.csrf });
    const pages = [
      `/dashboard/products/${productId}`,
      '/dashboard/products',
      `/dashboard/products/${productId}/tokens`,
      '/dashboard/licenses',
      `/dashboard/licenses/${license.key}`,
      `/dashboard/licenses?q=${encodeURIComponent(XSS)}`,
      '/dashboard/api-keys',
      '/dashboard/activity',
      '/dashboard/payments',
      '/dashboard/payments/purchases',
      '/dashboard/settings',
      '/dashboard/webhooks',
    ];
    for (const url of pages) {
      const res = await browser.request('GET', url);
      expect(res.status, url).toBe(200);
      expect(res.body, url).not.toContain('<script>alert');
      expect(res.body, url).not.toContain('<img src=x');
      // The CSP allows no inline style: the look comes from the stylesheet only.
      expect(res.body, url).not.toMatch(/\sstyle="/);
    }
    expect((await browser.request('GET', `/dashboard/products/${productId}`)).body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // The confirmation page echoes the device identifier in a hidden field: escaped too.
    const ask = await browser.request('POST', `/dashboard/licenses/${license.key}/devices/remove`, { device: XSS.slice(0, 90), csrf: browser.csrf });
    expect(ask.body).not.toContain('<script>alert');
    // A sign-up form given markup shows it back escaped.
    const visitor = await signIn(ctx, t.email);
    await visitor.request('POST', '/dashboard/logout', { csrf: visitor.csrf });
    await visitor.request('GET', '/dashboard/signup');
    const signup = await visitor.request('POST', '/dashboard/signup', { email: XSS, password: 'long enough password', csrf: visitor.csrf });
    expect(signup.status).toBe(400);
    expect(signup.body).not.toContain('<script>alert');
  });

  it('follows the page rules on every screen: one h1, a label for every field, header cells in every table, buttons with text', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id, { email: 'rules@example.com' });
    await activateDevice(ctx, t.auth, license.key, product.id, 'laptop');
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', '/dashboard/api-keys');
    await browser.request('POST', '/dashboard/api-keys', { name: 'Shop', csrf: browser.csrf });
    const signedIn = [
      '/dashboard',
      '/dashboard/products',
      '/dashboard/products/new',
      `/dashboard/products/${product.id}`,
      `/dashboard/products/${product.id}/tokens`,
      '/dashboard/licenses',
      '/dashboard/licenses/new',
      `/dashboard/licenses/${license.key}`,
      '/dashboard/api-keys',
      '/dashboard/portal',
      '/dashboard/payments',
      '/dashboard/payments/purchases',
      '/dashboard/settings',
      '/dashboard/webhooks',
      '/dashboard/activity',
      '/dashboard/account',
    ];
    const visitor = await signIn(ctx, t.email);
    await visitor.request('POST', '/dashboard/logout', { csrf: visitor.csrf });
    const open = ['/dashboard/login', '/dashboard/forgot', '/dashboard/signup'];
    for (const [who, urls] of [[browser, signedIn], [visitor, open]] as const) {
      for (const url of urls) {
        const res = await who.request('GET', url);
        expect(res.status, url).toBe(200);
        const body = res.body;
        expect(body.match(/<h1[\s>]/g), url).toHaveLength(1);
        const labelled = new Set([...body.matchAll(/<label[^>]*\sfor="([^"]+)"/g)].map((m) => m[1]));
        for (const field of body.matchAll(/<(input|select|textarea)\b([^>]*)>/g)) {
          const attrs = field[2]!;
          if (/\stype="(hidden|submit)"/.test(attrs)) continue;
          const id = /\sid="([^"]+)"/.exec(attrs)?.[1];
          expect(id && labelled.has(id), `${url}: ${field[0]}`).toBe(true);
        }
        for (const table of body.matchAll(/<table[\s\S]*?<\/table>/g)) expect(table[0], url).toMatch(/<th[\s>]/);
        for (const button of body.matchAll(/<button[^>]*>([\s\S]*?)<\/button>/g)) expect(textOf(button[1]!).trim(), `${url}: ${button[0]}`).not.toBe('');
      }
    }
  });

  it('deletes a product with licenses only with the box ticked, and its licenses with it', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id);
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', `/dashboard/products/${product.id}`);
    const csrf = browser.csrf;
    const ask = await browser.request('POST', `/dashboard/products/${product.id}/delete`, { csrf });
    expect(textOf(ask.body)).toContain('This product has licenses.');
    expect(ask.body).toContain('name="force"');
    const unticked = await browser.request('POST', `/dashboard/products/${product.id}/delete`, { confirm: 'yes', csrf });
    expect(textOf(unticked.body)).toContain('Tick the box to delete the licenses too.');
    expect(await ctx.services.products.get(cliPrincipal(t.accountId), product.id)).toMatchObject({ id: product.id });
    const done = await browser.request('POST', `/dashboard/products/${product.id}/delete`, { confirm: 'yes', force: 'on', csrf });
    expect(done.status).toBe(303);
    expect((await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}`, headers: t.auth })).status).toBe(404);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key } })).status).toBe(404);
  });

  describe('licenses list', () => {
    it('finds by e-mail and key prefix, filters by product and status, pages by keyset and exports the same list as CSV', async () => {
      const t = await createTenant(ctx);
      const a = await createProduct(ctx, t, { name: 'Alpha' });
      const b = await createProduct(ctx, t, { name: 'Beta', fallbackEnabled: true });
      const keys: string[] = [];
      for (let i = 0; i < 7; i++) keys.push((await createLicense(ctx, t, a.id, { email: `buyer${i % 2}@example.com` })).key);
      const expired = await createLicense(ctx, t, b.id, { type: 'timed', expiresAt: '2020-01-01', email: 'old@example.com' });
      const revoked = await createLicense(ctx, t, b.id, { email: 'gone@example.com' });
      await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': revoked.key }, json: { revoked: true } });
      await activateDevice(ctx, t.auth, keys[0]!, a.id, 'd1');
      await activateDevice(ctx, t.auth, keys[0]!, a.id, 'd2');
      await activateDevice(ctx, t.auth, keys[1]!, a.id, 'Écran-Ölaf');
      const other = await createTenant(ctx);
      await createLicense(ctx, other, (await createProduct(ctx, other)).id, { email: 'buyer0@example.com' });
      const browser = await signIn(ctx, t.email);
      const rowsOf = (body: string) => [...body.matchAll(/href="\/dashboard\/licenses\/([A-Z0-9-]{29})"/g)].map((m) => m[1]!);

      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?q=BUYER0%40example.com')).body).sort()).toEqual(keys.filter((_, i) => i % 2 === 0).sort());
      expect(rowsOf((await browser.request('GET', `/dashboard/licenses?q=${keys[3]!.slice(0, 8).toLowerCase()}`)).body)).toContain(keys[3]);
      expect(rowsOf((await browser.request('GET', `/dashboard/licenses?product=${b.id}`)).body).sort()).toEqual([expired.key, revoked.key].sort());
      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?status=expired')).body)).toEqual([expired.key]);
      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?status=revoked')).body)).toEqual([revoked.key]);
      const active = rowsOf((await browser.request('GET', '/dashboard/licenses?status=active')).body);
      expect(active.sort()).toEqual([...keys].sort());
      const listed = await browser.request('GET', `/dashboard/licenses?product=${b.id}`);
      expect(textOf(listed.body)).toContain('Expired (fallback)');
      expect(textOf((await browser.request('GET', '/dashboard/licenses?q=nobody%40example.com')).body)).toContain('No license matches');

      // Keyset pages of 50: 60 more licenses give two pages with no overlap and nothing missing.
      for (let i = 0; i < 60; i++) await createLicense(ctx, t, a.id);
      const first = await browser.request('GET', `/dashboard/licenses?product=${a.id}`);
      const page1 = rowsOf(first.body);
      const next = /href="(\/dashboard\/licenses\?[^"]*cursor=[^"]+)"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
      const page2 = rowsOf((await browser.request('GET', next)).body);
      expect(page1).toHaveLength(50);
      expect(page2).toHaveLength(17);
      expect(new Set([...page1, ...page2]).size).toBe(67);
      expect(textOf(first.body)).toContain('67 licenses');
      // Back from the second page: the first page again, the same rows in the same order.
      const second = await browser.request('GET', next);
      const prev = /href="(\/dashboard\/licenses\?[^"]*before=[^"]+)"/.exec(second.body)![1]!.replace(/&amp;/g, '&');
      expect(rowsOf((await browser.request('GET', prev)).body)).toEqual(page1);
      expect(first.body).not.toContain('before=');
      // Oldest first: the same licenses, the other way round.
      const oldest = rowsOf((await browser.request('GET', `/dashboard/licenses?product=${a.id}&sort=oldest`)).body);
      expect(oldest[0]).toBe(keys[0]);
      // Pieces: a domain, the middle of a key, a device's identifier; never another account's license.
      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?q=%40example.com&status=revoked')).body)).toEqual([revoked.key]);
      expect(rowsOf((await browser.request('GET', `/dashboard/licenses?q=${keys[5]!.slice(9, 16)}`)).body)).toEqual([keys[5]]);
      // 1-2 characters are a key prefix only: a piece of a device's name finds nothing (no key starts with O: not in the key alphabet).
      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?q=op')).body)).toEqual([]);
      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?q=laptop%20d2')).body)).toEqual([keys[0]]);
      expect(rowsOf((await browser.request('GET', '/dashboard/licenses?q=d1')).body)).toEqual([]);
      // Case folds in every script, as typed either way: "Ölaf" and "ölaf", "ÉCRAN" and "écran".
      for (const q of ['%C3%96laf', '%C3%B6laf', '%C3%89CRAN', '%C3%A9cran-%C3%B6']) expect(rowsOf((await browser.request('GET', `/dashboard/licenses?q=${q}`)).body), q).toEqual([keys[1]]);
      expect((await browser.request('GET', '/dashboard/licenses?cursor=garbage')).status).toBe(400);

      const csv = await browser.request('GET', `/dashboard/licenses/export.csv?q=buyer0%40example.com`);
      expect(csv.status).toBe(200);
      expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="licenses-\d{4}-\d{2}-\d{2}\.csv"$/);
      const lines = csv.body.trim().split('\r\n');
      expect(lines[0]).toBe('key,product_id,product_name,email,type,status,expires_at,max_devices,active_devices,created_at');
      expect(lines).toHaveLength(5);
      const withDevices = lines.find((l) => l.startsWith(keys[0]!))!.split(',');
      expect(withDevices[8]).toBe('2');
      const all = await browser.request('GET', '/dashboard/licenses/export.csv');
      expect(all.body.trim().split('\r\n')).toHaveLength(1 + 69);
    });

    it('defuses spreadsheet formulas in the CSV', async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t, { name: '=HYPERLINK("http://evil")' });
      await createLicense(ctx, t, p.id);
      const browser = await signIn(ctx, t.email);
      const csv = await browser.request('GET', '/dashboard/licenses/export.csv');
      expect(csv.body).toContain(`"'=HYPERLINK(""http://evil"")"`);
    });
  });

  describe('product image', () => {
    it('uploads and removes an image on plus; free accounts are told it needs plus', async () => {
      const t = await createTenant(ctx, 'plus');
      const p = await createProduct(ctx, t);
      const browser = await signIn(ctx, t.email);
      await browser.request('GET', `/dashboard/products/${p.id}`);
      const csrf = browser.csrf;
      const upload = (fields: Record<string, string>, file?: Parameters<typeof multipart>[1]) => {
        const body = multipart(fields, file);
        return ctx.app.inject({ method: 'POST', url: `/dashboard/products/${p.id}/image`, headers: { cookie: browser.cookieHeader, 'content-type': body.contentType }, payload: body.payload });
      };
      expect((await upload({}, { name: 'a.png', type: 'image/png', data: PNG })).statusCode).toBe(403);
      expect((await upload({ csrf: 'A'.repeat(43) }, { name: 'a.png', type: 'image/png', data: PNG })).statusCode).toBe(403);
      const notImage = await upload({ csrf }, { name: 'a.txt', type: 'image/png', data: Buffer.from('hello, not an image') });
      expect(notImage.statusCode).toBe(415);
      expect(textOf(notImage.body)).toContain('must be a PNG, JPEG or WebP');
      const tooBig = await upload({ csrf }, { name: 'big.png', type: 'image/png', data: Buffer.concat([PNG, Buffer.alloc(1024 * 1024)]) });
      expect(tooBig.statusCode).toBe(413);
      expect((await call(ctx, { method: 'GET', url: `/api/v1/public/products/${p.id}/image` })).status).toBe(404);
      const ok = await upload({ csrf }, { name: 'a.png', type: 'image/png', data: PNG });
      expect(ok.statusCode).toBe(303);
      const image = await ctx.app.inject({ method: 'GET', url: `/api/v1/public/products/${p.id}/image` });
      expect(image.rawPayload.equals(PNG)).toBe(true);
      expect((await browser.request('GET', `/dashboard/products/${p.id}`)).body).toContain(`<img class="product-image" src="/api/v1/public/products/${p.id}/image"`);
      const remove = await browser.request('POST', `/dashboard/products/${p.id}/image/delete`, { csrf, confirm: 'yes' });
      expect(remove.status).toBe(303);
      expect((await call(ctx, { method: 'GET', url: `/api/v1/public/products/${p.id}/image` })).status).toBe(404);

      const free = await createTenant(ctx);
      const fp = await createProduct(ctx, free);
      const freeBrowser = await signIn(ctx, free.email);
      expect(textOf((await freeBrowser.request('GET', `/dashboard/products/${fp.id}`)).body)).toContain('need the plus plan');
    });
  });

  describe('license devices', () => {
    it('lists a license\'s devices 100 a page in activation order, with the count and a pager', async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      const license = await createLicense(ctx, t, p.id, { maxDevices: 300 });
      const ids = Array.from({ length: 205 }, (_, i) => `device-${String(i).padStart(3, '0')}`);
      for (const identifier of ids) await ctx.services.licenses.publicActivate(license.key, p.id, { identifier, name: `Name ${identifier}` });
      const browser = await signIn(ctx, t.email);
      const page = `/dashboard/licenses/${license.key}`;
      const devicesOn = async (url: string) => {
        const res = await browser.request('GET', url);
        expect(res.status, url).toBe(200);
        const section = res.body.slice(res.body.indexOf('id="devices-title"'), res.body.indexOf('id="edit-title"'));
        return { body: res.body, section, ids: [...section.matchAll(/<tr><td>[^<]*<\/td><td><code>([^<]+)<\/code>/g)].map((m) => m[1]) };
      };
      const first = await devicesOn(page);
      expect(first.ids).toEqual(ids.slice(0, 100));
      expect(first.body).toContain('<div><dt>Devices</dt><dd>205 of 300</dd></div>');
      expect(first.section).toContain('Devices 1 to 100 of 205 · page 1 of 3');
      expect(first.section).toContain(`href="${page}?devicesPage=2#devices-title">Next`);
      expect(first.section).not.toContain('rel="prev"');
      expect((await devicesOn(`${page}?devicesPage=2`)).ids).toEqual(ids.slice(100, 200));
      const last = await devicesOn(`${page}?devicesPage=3`);
      expect(last.ids).toEqual(ids.slice(200));
      expect(last.section).toContain('Devices 201 to 205 of 205 · page 3 of 3');
      expect(last.section).toContain(`href="${page}?devicesPage=2#devices-title">Previous`);
      expect(last.section).not.toContain('rel="next"');
      const past = await devicesOn(`${page}?devicesPage=9`);
      expect(past.ids).toEqual([]);
      expect(past.section).toContain('No devices on page 9');
      expect(past.section).toContain(`href="${page}?devicesPage=3#devices-title">Previous`);
      expect((await devicesOn(`${page}?devicesPage=nope`)).ids).toEqual(ids.slice(0, 100));
      expect((await devicesOn(`${page}?devicesPage=0`)).ids).toEqual(ids.slice(0, 100));
      // A license whose devices fit one page shows no pager.
      const small = await createLicense(ctx, t, p.id);
      await ctx.services.licenses.publicActivate(small.key, p.id, { identifier: 'only', name: 'Only' });
      const one = await devicesOn(`/dashboard/licenses/${small.key}`);
      expect(one.ids).toEqual(['only']);
      expect(one.section).not.toContain('class="pager"');
    });
  });

  describe('license audit log', () => {
    it("shows the license's changes newest first with their type, actor, changes and time; another account gets a 404", async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      const { secret } = await ctx.services.apiKeys.create(cliPrincipal(t.accountId), XSS.slice(0, 90));
      const license = await createLicense(ctx, t, p.id, { email: 'first@example.com' });
      const browser = await signIn(ctx, t.email);
      const page = `/dashboard/licenses/${license.key}`;
      await browser.request('GET', page);
      expect((await browser.request('POST', page, { type: 'perpetual', maxDevices: '7', email: 'second@example.com', expiresAt: '', csrf: browser.csrf })).status).toBe(303);
      expect((await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { authorization: `Bearer ${secret}`, 'license-key': license.key }, json: { revoked: true } })).status).toBe(200);
      const res = await browser.request('GET', page);
      const section = res.body.slice(res.body.indexOf('id="audit-title"'));
      const rows = [...section.matchAll(/<tr><td>[^<]*<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td><td>(.*?)<\/td><\/tr>/g)].map((m) => [m[1], textOf(m[2]!), textOf(m[3]!)]);
      expect(rows.map((r) => r[0])).toEqual(['Revoked', 'Updated', 'Created']);
      expect(rows[0]![1]).toContain('API key &lt;script&gt;');
      expect(rows[0]![2]).toContain('revoked: false → true');
      expect(rows[1]![1]).toBe(`Dashboard (${t.email})`);
      expect(rows[1]![2]).toContain('maxDevices: 3 → 7');
      expect(rows[1]![2]).toContain('email: first@example.com → second@example.com');
      expect(rows[2]![1]).toBe('API key test');
      expect(section).not.toContain('<script>alert');
      const other = await signIn(ctx, (await createTenant(ctx)).email);
      expect((await other.request('GET', page)).status).toBe(404);
    });
  });

  describe('activity', () => {
    it('counts successful public activations and validations in memory, flushes them, and shows the same numbers in chart and table', async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t, { name: 'Counted' });
      const q = await createProduct(ctx, t, { name: 'Other' });
      const license = await createLicense(ctx, t, p.id);
      const body = { licenseKey: license.key, productId: p.id, deviceIdentifier: 'dev-1' };
      expect((await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { ...body, deviceName: 'Laptop' } })).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: body })).body.isValid).toBe(true);
      // A failed validation is not counted.
      await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { ...body, deviceIdentifier: 'unknown' } });
      // Nothing written yet: the counts live in memory until the flush.
      expect(await ctx.store.read.all(ctx.store.db.selectFrom('activity_daily').selectAll().where('account_id', '=', t.accountId))).toEqual([]);
      const browser = await signIn(ctx, t.email);
      const today = new Date().toISOString().slice(0, 10);
      const row = (body: string) => new RegExp(`<tr><td>${today}</td><td class="num">(\\d+)</td><td class="num">(\\d+)</td></tr>`).exec(body)!.slice(1).map(Number);
      expect(row((await browser.request('GET', '/dashboard/activity')).body)).toEqual([1, 3]);
      await ctx.services.activity.flush();
      const stored = await ctx.store.read.all(ctx.store.db.selectFrom('activity_daily').selectAll().where('account_id', '=', t.accountId));
      expect(stored.map((r) => [r.product_id, Number(r.activations), Number(r.validations)])).toEqual([[p.id, 1, 3]]);
      // After the flush the page reads the same numbers from the store, and a second flush adds to them.
      await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: body });
      await ctx.services.activity.flush();
      const page = await browser.request('GET', `/dashboard/activity?product=${p.id}`);
      expect(row(page.body)).toEqual([1, 4]);
      expect(page.body).toContain('aria-label="Activity of Counted: 1 activations and 4 validations in the last 30 days"');
      expect(row((await browser.request('GET', `/dashboard/activity?product=${q.id}`)).body)).toEqual([0, 0]);
      // Another account sees none of it.
      const other = await signIn(ctx, (await createTenant(ctx)).email);
      expect(row((await other.request('GET', '/dashboard/activity')).body)).toEqual([0, 0]);
    });
  });
});

import { expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { describeFormCases, type Fields } from '../support/dashboard-forms.ts';
import { addMember } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';

/** The product form as the page fills it in, with the licensing model's settings changed. */
const productForm = (o: Fields = {}): Fields => ({
  name: 'Model App',
  description: '',
  portalShow: 'on',
  portalAllowDeviceReset: 'on',
  portalDeviceResetLimit: '3',
  portalDeviceResetWindowDays: '30',
  defaultEntitlements: 'pro export.pdf',
  floatingEnabled: 'on',
  leaseSeconds: '120',
  trialEnabled: 'on',
  trialDays: '30',
  trialMaxDevices: '2',
  ...o,
});

const licensePath = (key: string) => `/dashboard/licenses/${key}`;
const activate = (ctx: TestContext, key: string, productId: string, identifier: string) =>
  call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: key, deviceIdentifier: identifier, deviceName: `Machine ${identifier}`, productId } });
const licenseOf = (ctx: TestContext, t: Tenant, key: string) => ctx.services.licenses.get(cliPrincipal(t.accountId), key);
const keysOf = async (ctx: TestContext, t: Tenant, productId: string) =>
  (await ctx.services.licenses.search(cliPrincipal(t.accountId), { productId, limit: 100 })).data.map((l) => l.key).sort();

forEachStore('dashboard: licensing model', (kind) => {
  // A clock the tests move forward (a lease lapses without a sleep).
  let skew = 0;
  const ctx = useTestApp(kind, { clock: () => Date.now() + skew });

  describeFormCases(ctx, [
    {
      name: 'product settings: entitlements, floating seats, trials (edit)',
      prepare: async (c, t) => {
        const product = await createProduct(c, t);
        return {
          page: `/dashboard/products/${product.id}`,
          action: `/dashboard/products/${product.id}`,
          good: productForm(),
          bad: { fields: productForm({ leaseSeconds: '10' }), message: 'Lease length (seconds) must be at least 60.' },
          state: () => c.services.products.get(cliPrincipal(t.accountId), product.id),
          owned: true,
        };
      },
    },
    {
      name: 'product settings (new product)',
      prepare: async (c, t) => ({
        page: '/dashboard/products/new',
        action: '/dashboard/products/new',
        good: productForm(),
        bad: { fields: productForm({ defaultEntitlements: 'pro Export' }), message: 'Default entitlements must be codes of lower-case letters' },
        state: () => c.services.products.list(cliPrincipal(t.accountId)),
        owned: false,
      }),
    },
    {
      name: 'license entitlements and metadata',
      prepare: async (c, t) => {
        const product = await createProduct(c, t);
        const license = await createLicense(c, t, product.id);
        return {
          page: licensePath(license.key),
          action: `${licensePath(license.key)}/model`,
          good: { entitlements: 'pro', metaRows: '3', metaKey0: 'crm', metaValue0: '42' },
          bad: { fields: { entitlements: 'pro', metaRows: '3', metaKey0: 'k'.repeat(41), metaValue0: '42' }, message: 'Key 1 must be at most 40 characters.' },
          state: () => licenseOf(c, t, license.key),
          owned: true,
        };
      },
    },
    {
      name: 'rotate key',
      prepare: async (c, t) => {
        const product = await createProduct(c, t);
        const license = await createLicense(c, t, product.id);
        return { page: licensePath(license.key), action: `${licensePath(license.key)}/rotate-key`, good: {}, state: () => keysOf(c, t, product.id), owned: true, destructive: true };
      },
    },
  ]);

  it('the product page shows the settings as stored; every wrong field is named at once in its label, nothing stored', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t, { defaultEntitlements: ['pro'], floating: { enabled: true, leaseSeconds: 300 }, trial: { enabled: true, days: 7, maxDevices: 1 } });
    const browser = await signIn(ctx, t.email);
    const page = await browser.request('GET', `/dashboard/products/${product.id}`);
    expect(page.body).toMatch(/id="f-defaultEntitlements" name="defaultEntitlements" type="text" value="pro"/);
    expect(page.body).toMatch(/id="f-floatingEnabled" name="floatingEnabled" type="checkbox" value="on" checked/);
    expect(page.body).toMatch(/name="leaseSeconds" type="number" value="300"/);
    expect(page.body).toMatch(/name="trialDays" type="number" value="7"/);
    const before = await ctx.services.products.get(cliPrincipal(t.accountId), product.id);
    const res = await browser.request('POST', `/dashboard/products/${product.id}`, {
      ...productForm({ defaultEntitlements: 'pro, Export PDF', leaseSeconds: '90000', trialDays: '0', trialMaxDevices: 'many' }),
      csrf: browser.csrf,
    });
    expect(res.status).toBe(400);
    const text = textOf(res.body);
    expect(text).toContain('4 fields need a fix');
    expect(text).toContain('Default entitlements must be codes of lower-case letters, digits and _ . - (1 to 64 characters, starting with a letter or digit), not &quot;Export&quot;, &quot;PDF&quot;.');
    expect(text).toContain('Lease length (seconds) must be at most 86400.');
    expect(text).toContain('Trial length (days) must be at least 1.');
    expect(text).toContain('Devices per trial must be a whole number.');
    expect(await ctx.services.products.get(cliPrincipal(t.accountId), product.id)).toEqual(before);
    // Fixed: saved, floating off, trial settings kept while trials are off.
    const saved = await browser.request('POST', `/dashboard/products/${product.id}`, { ...productForm({ floatingEnabled: '', trialEnabled: '' }), csrf: browser.csrf });
    expect(saved.status).toBe(303);
    const after = await ctx.services.products.get(cliPrincipal(t.accountId), product.id);
    expect(after.defaultEntitlements).toEqual(['pro', 'export.pdf']);
    expect(after.floating).toEqual({ enabled: false, leaseSeconds: 120 });
    expect(after.trial).toEqual({ enabled: false, days: 30, maxDevices: 2 });
  });

  it('the metadata editor adds, renames, swaps and removes entries; an entry added meanwhile through the API stays', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id, { metadata: { crm: '42', plan: 'gold', old: 'x' }, entitlements: ['basic'] });
    const browser = await signIn(ctx, t.email);
    const page = await browser.request('GET', licensePath(license.key));
    expect(textOf(page.body)).toContain('Entitlements basic');
    expect(page.body).toMatch(/name="metaKey0" type="text" value="crm"/);
    expect(page.body).toMatch(/name="metaRows" value="6"/);
    // Between the page and the save, the API adds a key.
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': license.key }, json: { metadata: { added: 'by api' } } });
    const res = await browser.request('POST', `${licensePath(license.key)}/model`, {
      csrf: browser.csrf,
      entitlements: 'pro  sync,pro',
      metaRows: '6',
      // crm and plan swap their keys; old is emptied (removed); a new entry in a blank row.
      metaKey0: 'plan', metaValue0: '42', metaWas0: 'crm',
      metaKey1: 'crm', metaValue1: 'gold', metaWas1: 'plan',
      metaKey2: 'old', metaValue2: '', metaWas2: 'old',
      metaKey3: 'seat', metaValue3: 'A1',
      metaKey4: '', metaValue4: '',
    });
    expect(res.status, res.body).toBe(303);
    const after = await licenseOf(ctx, t, license.key);
    expect(after.entitlements).toEqual(['pro', 'sync']);
    expect({ ...after.metadata }).toEqual({ plan: '42', crm: 'gold', seat: 'A1', added: 'by api' });
    expect(textOf((await browser.request('GET', res.headers.location as string)).body)).toContain('Entitlements and metadata saved.');
  });

  it('the metadata editor names every wrong row at once, in the label words, within the 50-key limit; nothing is stored', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const full = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    const license = await createLicense(ctx, t, product.id, { metadata: full });
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', licensePath(license.key));
    const before = await licenseOf(ctx, t, license.key);
    const rows: Fields = Object.fromEntries(Object.keys(full).flatMap((k, i) => [[`metaKey${i}`, k], [`metaValue${i}`, 'v'], [`metaWas${i}`, k]]));
    const res = await browser.request('POST', `${licensePath(license.key)}/model`, {
      ...rows,
      csrf: browser.csrf,
      entitlements: 'Pro',
      metaRows: '53',
      metaKey50: 'x'.repeat(41),
      metaValue50: 'y',
      metaKey51: 'k0', // the same as key 1
      metaValue51: 'again',
      metaKey52: 'long', // a 51st key
      metaValue52: 'z'.repeat(501),
    });
    expect(res.status).toBe(400);
    const text = textOf(res.body);
    expect(text).toContain('Entitlements must be codes of lower-case letters');
    expect(text).toContain('Key 52 is the same as key 1.');
    expect(text).toContain('Key 51 must be at most 40 characters.');
    expect(text).toContain('Value 53 must be at most 500 characters.');
    expect(text).toContain('Metadata must hold at most 50 keys.');
    // The rows come back as typed.
    expect(res.body).toContain(`value="${'z'.repeat(501)}"`);
    const keyless = await browser.request('POST', `${licensePath(license.key)}/model`, { ...rows, csrf: browser.csrf, entitlements: '', metaRows: '53', metaValue50: 'a value without a key' });
    expect(keyless.status).toBe(400);
    expect(textOf(keyless.body)).toContain('Key 51 is required for a value.');
    expect(await licenseOf(ctx, t, license.key)).toEqual(before);
  });

  it('devices show when they were last seen; on a floating product, when their lease ends or that it lapsed', async () => {
    const t = await createTenant(ctx);
    const locked = await createProduct(ctx, t, { name: 'Node-locked' });
    const floating = await createProduct(ctx, t, { name: 'Floating', floating: { enabled: true, leaseSeconds: 600 } });
    const a = await createLicense(ctx, t, locked.id);
    const b = await createLicense(ctx, t, floating.id);
    expect((await activate(ctx, a.key, locked.id, 'pc-1')).status).toBe(200);
    expect((await activate(ctx, b.key, floating.id, 'vm-1')).status).toBe(200);
    const browser = await signIn(ctx, t.email);
    const lockedPage = textOf((await browser.request('GET', licensePath(a.key))).body);
    expect(lockedPage).toMatch(/Last seen/);
    expect(lockedPage).not.toMatch(/Lease ends/);
    const floatingPage = (await browser.request('GET', licensePath(b.key))).body;
    expect(textOf(floatingPage)).toMatch(/Lease ends/);
    expect(textOf(floatingPage)).toContain('Seats Floating, 10 min lease');
    const device = (await licenseOf(ctx, t, b.key)).activeDevices[0]!;
    expect(device.leaseExpiresAt).toBeGreaterThan(Date.now());
    expect(textOf(floatingPage)).not.toContain('Lapsed');
    skew = 11 * 60_000;
    try {
      expect(textOf((await browser.request('GET', licensePath(b.key))).body)).toMatch(/Lapsed \d/);
    } finally {
      skew = 0;
    }
  });

  it('rotating asks first, offers the e-mail, shows the new key once; the old key is gone, devices stay', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id, { email: 'leaky@example.com' });
    await activate(ctx, license.key, product.id, 'pc-1');
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', licensePath(license.key));
    const ask = await browser.request('POST', `${licensePath(license.key)}/rotate-key`, { csrf: browser.csrf });
    expect(ask.status).toBe(200);
    expect(textOf(ask.body)).toContain('E-mail the new key to leaky@example.com');
    const done = await browser.request('POST', `${licensePath(license.key)}/rotate-key`, { csrf: browser.csrf, confirm: 'yes', notify: 'on' });
    expect(done.status).toBe(200);
    expect(done.headers['cache-control']).toBe('no-store');
    const newKey = /id="new-license-key"[^>]*>([A-Z0-9-]+)</.exec(done.body)![1]!;
    expect(newKey).not.toBe(license.key);
    expect(textOf(done.body)).toContain('The new key is on its way to leaky@example.com.');
    expect((await browser.request('GET', licensePath(license.key))).status).toBe(404);
    const moved = await licenseOf(ctx, t, newKey);
    expect(moved.activeDevices.map((d) => d.identifier)).toEqual(['pc-1']);
    const mails = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('payload').where('kind', '=', 'mail'));
    expect(mails.some((m) => m.payload.includes(newKey) && m.payload.includes('leaky@example.com'))).toBe(true);
    // The page the new key opens names it; the audit log says the key changed.
    expect(textOf((await browser.request('GET', licensePath(newKey))).body)).toContain(`key: ${license.key} → ${newKey}`);
  });

  it('a forged e-mail choice on a license without an address is refused with the page, nothing changed', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id);
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', licensePath(license.key));
    const ask = await browser.request('POST', `${licensePath(license.key)}/rotate-key`, { csrf: browser.csrf });
    expect(textOf(ask.body)).not.toContain('E-mail the new key');
    const res = await browser.request('POST', `${licensePath(license.key)}/rotate-key`, { csrf: browser.csrf, confirm: 'yes', notify: 'on' });
    expect(res.status).toBe(400);
    expect(textOf(res.body)).toContain('This license has no e-mail address to send the new key to');
    expect(await keysOf(ctx, t, product.id)).toEqual([license.key]);
  });

  it("a viewer's forged posts (their own session, a valid CSRF token) are refused and change nothing; support may edit and rotate, not product settings", async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const license = await createLicense(ctx, t, product.id, { metadata: { crm: '1' } });
    const owner = await signIn(ctx, t.email);
    const { browser: viewer } = await addMember(ctx, owner, 'viewer');
    const before = { license: await licenseOf(ctx, t, license.key), product: await ctx.services.products.get(cliPrincipal(t.accountId), product.id) };
    await viewer.request('GET', licensePath(license.key));
    const csrf = viewer.csrf;
    for (const [url, form] of [
      [`${licensePath(license.key)}/model`, { entitlements: 'pro', metaRows: '1', metaKey0: 'crm', metaValue0: 'pwned', metaWas0: 'crm' }],
      [`${licensePath(license.key)}/rotate-key`, { confirm: 'yes' }],
      [`/dashboard/products/${product.id}`, productForm()],
    ] as const) {
      const res = await viewer.request('POST', url, { ...form, csrf });
      expect(res.status, url).toBe(403);
      expect(textOf(res.body)).toContain('Your role in this account does not allow this');
    }
    expect(await licenseOf(ctx, t, license.key)).toEqual(before.license);
    expect(await ctx.services.products.get(cliPrincipal(t.accountId), product.id)).toEqual(before.product);
    // The viewer still reads the page, without being able to use its forms.
    expect((await viewer.request('GET', licensePath(license.key))).status).toBe(200);

    const { browser: support } = await addMember(ctx, owner, 'support');
    await support.request('GET', licensePath(license.key));
    const supportCsrf = support.csrf;
    expect((await support.request('POST', `/dashboard/products/${product.id}`, { ...productForm(), csrf: supportCsrf })).status).toBe(403);
    const saved = await support.request('POST', `${licensePath(license.key)}/model`, { entitlements: 'pro', metaRows: '1', metaKey0: 'crm', metaValue0: '2', metaWas0: 'crm', csrf: supportCsrf });
    expect(saved.status).toBe(303);
    expect((await licenseOf(ctx, t, license.key)).entitlements).toEqual(['pro']);
    const rotated = await support.request('POST', `${licensePath(license.key)}/rotate-key`, { confirm: 'yes', csrf: supportCsrf });
    expect(rotated.status).toBe(200);
    expect(await keysOf(ctx, t, product.id)).not.toContain(license.key);
  });
});

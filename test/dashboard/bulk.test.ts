import { beforeEach, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { applyBulk } from '../../src/modules/licenses/bulk.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { signIn, textOf, type WebBrowser } from '../support/dashboard.ts';
import { outboxFor } from '../support/mail.ts';
import { addMember } from '../support/members.ts';
import { forEachStore } from '../support/stores.ts';

const EXPIRY = '2030-01-01T00:00:00.000Z';

forEachStore('dashboard bulk actions', (kind) => {
  const ctx = useTestApp(kind);
  let t: Tenant;
  let productId: string;
  let keys: string[];
  let owner: WebBrowser;

  beforeEach(async () => {
    t = await createTenant(ctx, 'plus');
    productId = (await createProduct(ctx, t)).id;
    keys = [];
    for (let i = 0; i < 4; i++) keys.push((await createLicense(ctx, t, productId, { type: 'timed', expiresAt: EXPIRY, email: `buyer${i}@example.com` })).key);
    owner = await signIn(ctx, t.email);
    await owner.request('GET', '/dashboard/licenses');
  });

  const all = async (tenant = t) => {
    const list = (await ctx.services.licenses.search(cliPrincipal(tenant.accountId), { limit: 100 })).data;
    return new Map(list.map((l) => [l.key, l]));
  };
  const tick = (...ks: string[]) => Object.fromEntries(ks.map((k) => [`k:${k}`, 'on']));
  /** Posts the bulk form; a confirmed action answers 303 to its result page, which this follows. */
  const post = async (b: WebBrowser, form: Record<string, string>) => {
    const res = await b.request('POST', '/dashboard/licenses/bulk', { csrf: form.csrf ?? b.csrf, ...form });
    const location = res.headers.location;
    return res.status === 303 && typeof location === 'string' && location.startsWith('/dashboard/licenses/bulk/done?') ? b.request('GET', location) : res;
  };
  const eventsOf = async (key: string) =>
    ((await call(ctx, { method: 'GET', url: `/api/v1/events?licenseKey=${key}`, headers: t.auth })).body.data as { type: string }[]).map((e) => e.type);

  it('lists a checkbox per row, "select all on this page" and the bulk bar', async () => {
    const page = await owner.request('GET', '/dashboard/licenses');
    for (const key of keys) expect(page.body).toContain(`name="k:${key}"`);
    expect(textOf(page.body)).toContain('Select all on this page');
    expect(page.body).toContain('action="/dashboard/licenses/bulk"');
    expect(textOf(page.body)).toContain('All 4 licenses matching this search');
  });

  it('revokes exactly the selected licenses after a confirmation that says how many; each gets its own event', async () => {
    const [a, b] = keys;
    const asked = await post(owner, { action: 'revoke', scope: 'selected', ...tick(a!, b!) });
    expect(asked.status).toBe(200);
    expect(textOf(asked.body)).toContain('Revoke 2 licenses?');
    expect(asked.body).toContain('name="confirm" value="yes"');
    expect([...(await all()).values()].filter((l) => l.revoked)).toEqual([]);
    const keysField = /name="keys" value="([^"]+)"/.exec(asked.body)![1]!;
    const done = await post(owner, { action: 'revoke', scope: 'selected', keys: keysField, confirm: 'yes' });
    expect(done.status).toBe(200);
    expect(textOf(done.body)).toContain('Revoked 2 licenses.');
    const after = await all();
    expect(keys.filter((k) => after.get(k)!.revoked)).toEqual([a, b].sort((x, y) => keys.indexOf(x!) - keys.indexOf(y!)));
    for (const k of [a!, b!]) expect(await eventsOf(k)).toContain('license.revoked');
    expect(await eventsOf(keys[2]!)).toEqual(['license.created']);
    // Again: both skipped, counted with the reason.
    const again = await post(owner, { action: 'revoke', scope: 'selected', keys: keysField, confirm: 'yes' });
    expect(textOf(again.body)).toContain('Revoked 0 licenses. Skipped 2: 2 already revoked.');
    // Un-revoke one of them and one that is not revoked.
    const un = await post(owner, { action: 'unrevoke', scope: 'selected', keys: `${a} ${keys[3]}`, confirm: 'yes' });
    expect(textOf(un.body)).toContain('Un-revoked 1 license. Skipped 1: 1 not revoked.');
    const final = await all();
    expect(keys.map((k) => final.get(k)!.revoked)).toEqual([false, true, false, false]);
  });

  it('"select all on this page" posts the page\'s keys', async () => {
    const res = await post(owner, { action: 'revoke', scope: 'selected', pageAll: 'on', pageKeys: keys.join(' ') });
    expect(textOf(res.body)).toContain('Revoke 4 licenses?');
  });

  it('extends by N days from each expiry; a perpetual license is skipped and counted', async () => {
    const perpetual = (await createLicense(ctx, t, productId)).key;
    const asked = await post(owner, { action: 'extend', days: '30', scope: 'selected', ...tick(keys[0]!, perpetual) });
    expect(textOf(asked.body)).toContain('Extend 2 licenses by 30 days?');
    const done = await post(owner, { action: 'extend', days: '30', scope: 'selected', keys: `${keys[0]} ${perpetual}`, confirm: 'yes' });
    expect(textOf(done.body)).toContain('Extended 1 license. Skipped 1: 1 perpetual');
    const after = await all();
    expect(after.get(keys[0]!)!.expiresAt).toBe(Date.parse(EXPIRY) + 30 * 86_400_000);
    expect(after.get(keys[1]!)!.expiresAt).toBe(Date.parse(EXPIRY));
    expect(after.get(perpetual)!.expiresAt).toBeNull();
    expect(await eventsOf(keys[0]!)).toContain('license.updated');
  });

  it('answers a confirmed action with a redirect to its result: reloading the result repeats nothing', async () => {
    const res = await owner.request('POST', '/dashboard/licenses/bulk', { csrf: owner.csrf, action: 'extend', days: '30', scope: 'selected', keys: keys[0]!, q: 'buyer0', confirm: 'yes' });
    expect(res.status).toBe(303);
    const location = String(res.headers.location);
    expect(location).toMatch(/^\/dashboard\/licenses\/bulk\/done\?/);
    for (let i = 0; i < 3; i++) {
      const page = await owner.request('GET', location);
      expect(page.status).toBe(200);
      expect(textOf(page.body)).toContain('Extended 1 license.');
      expect(page.body).toContain('href="/dashboard/licenses?q=buyer0"');
    }
    expect((await all()).get(keys[0]!)!.expiresAt).toBe(Date.parse(EXPIRY) + 30 * 86_400_000);
    expect((await outboxFor(ctx.store, 'buyer0@example.com')).filter((m) => m.kind === 'purchase')).toHaveLength(0);
  });

  it('the result page shows only counts: text in its URL is never shown, an unknown action leads back to the list', async () => {
    const forged = await owner.request('GET', '/dashboard/licenses/bulk/done?done=revoke&changed=<b>9</b>&skipped=pwned:3,already_revoked:2&failed=x');
    expect(textOf(forged.body)).toContain('Revoked 0 licenses. Skipped 2: 2 already revoked.');
    expect(forged.body).not.toContain('pwned');
    expect(forged.body).not.toContain('<b>9');
    const unknown = await owner.request('GET', '/dashboard/licenses/bulk/done?done=nuke&product=p1');
    expect(unknown.status).toBe(303);
    expect(unknown.headers.location).toBe('/dashboard/licenses?product=p1');
  });

  it('two bulk extends of the same license at once both apply (each change locks the license)', async () => {
    const owner = cliPrincipal(t.accountId);
    const [x, y] = await Promise.all([applyBulk(ctx.services.licenses, owner, 'extend', [keys[0]!, keys[1]!], 10), applyBulk(ctx.services.licenses, owner, 'extend', [keys[1]!, keys[0]!], 10)]);
    expect([x.changed, y.changed]).toEqual([2, 2]);
    const after = await all();
    for (const k of [keys[0]!, keys[1]!]) expect(after.get(k)!.expiresAt).toBe(Date.parse(EXPIRY) + 20 * 86_400_000);
  });

  it('deletes the selected licenses and their devices, saying so first', async () => {
    const asked = await post(owner, { action: 'delete', scope: 'selected', ...tick(keys[1]!) });
    expect(textOf(asked.body)).toContain('This deletes 1 license and its devices');
    const done = await post(owner, { action: 'delete', scope: 'selected', keys: keys[1]!, confirm: 'yes' });
    expect(textOf(done.body)).toContain('Deleted 1 license.');
    expect([...(await all()).keys()].sort()).toEqual([keys[0], keys[2], keys[3]].sort());
  });

  it('e-mails the key to each selected license with an address; one without is skipped', async () => {
    const bare = (await createLicense(ctx, t, productId)).key;
    const done = await post(owner, { action: 'email', scope: 'selected', keys: `${keys[0]} ${bare}`, confirm: 'yes' });
    expect(textOf(done.body)).toContain('E-mailed the key of 1 license. Skipped 1: 1 no e-mail address.');
    expect((await outboxFor(ctx.store, 'buyer0@example.com')).filter((m) => m.kind === 'purchase')).toHaveLength(1);
    expect((await outboxFor(ctx.store, 'buyer1@example.com')).filter((m) => m.kind === 'purchase')).toHaveLength(0);
  });

  it('exports the selection as CSV, nothing else', async () => {
    const res = await post(owner, { action: 'export', scope: 'selected', ...tick(keys[0]!, keys[2]!) });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const lines = res.body.trim().split('\r\n');
    expect(lines).toHaveLength(3);
    expect(lines.slice(1).map((l: string) => l.split(',')[0]).sort()).toEqual([keys[0], keys[2]].sort());
  });

  it('applies to every license matching the search, the confirmation carrying the filter', async () => {
    const other = (await createProduct(ctx, t, { name: 'Other' })).id;
    const outside = (await createLicense(ctx, t, other, { type: 'timed', expiresAt: EXPIRY })).key;
    const asked = await post(owner, { action: 'revoke', scope: 'all', product: productId });
    expect(textOf(asked.body)).toContain('Revoke 4 licenses?');
    expect(asked.body).toContain(`name="product" value="${productId}"`);
    expect(asked.body).not.toContain('name="keys"');
    const done = await post(owner, { action: 'revoke', scope: 'all', product: productId, confirm: 'yes' });
    expect(textOf(done.body)).toContain('Revoked 4 licenses.');
    const after = await all();
    expect(keys.every((k) => after.get(k)!.revoked)).toBe(true);
    expect(after.get(outside)!.revoked).toBe(false);
  });

  it('refuses bad input on the list with a form error, changing nothing', async () => {
    const before = JSON.stringify([...(await all()).values()]);
    for (const [form, message] of [
      [{ action: 'revoke', scope: 'selected' }, 'Select at least one license'],
      [{ action: '', scope: 'selected', ...tick(keys[0]!) }, 'Choose an action.'],
      [{ action: 'nuke', scope: 'selected', ...tick(keys[0]!) }, 'Choose an action.'],
      [{ action: 'extend', days: '0', scope: 'selected', ...tick(keys[0]!) }, 'Days must be a whole number from 1 to 3650.'],
      [{ action: 'extend', days: '3651', scope: 'selected', ...tick(keys[0]!) }, 'Days must be a whole number from 1 to 3650.'],
      [{ action: 'extend', days: 'ten', scope: 'selected', confirm: 'yes', ...tick(keys[0]!) }, 'Days must be a whole number from 1 to 3650.'],
      [{ action: 'revoke', scope: 'all', q: 'nobody-matches-this', confirm: 'yes' }, 'No license matches this search.'],
      [{ action: 'delete', scope: 'selected', confirm: 'yes', keys: Array.from({ length: 1001 }, (_, i) => `K${i}`).join(' ') }, 'more than 1,000 licenses'],
    ] as const) {
      const res = await post(owner, form);
      expect(res.status, JSON.stringify(form)).toBe(400);
      expect(textOf(res.body)).toContain(message);
    }
    expect(JSON.stringify([...(await all()).values()])).toBe(before);
  });

  it('refuses a post without the CSRF token', async () => {
    const res = await owner.request('POST', '/dashboard/licenses/bulk', { action: 'revoke', scope: 'selected', keys: keys[0]!, confirm: 'yes' });
    expect(res.status).toBe(403);
    expect((await all()).get(keys[0]!)!.revoked).toBe(false);
  });

  it("a viewer's forged post with a valid CSRF token is 403 and changes nothing; support may revoke", async () => {
    const { browser: viewer } = await addMember(ctx, owner, 'viewer');
    const page = await viewer.request('GET', '/dashboard/licenses');
    expect(page.body).not.toContain('action="/dashboard/licenses/bulk"');
    const csrf = viewer.csrf;
    for (const action of ['revoke', 'delete', 'extend', 'email', 'export']) {
      const res = await post(viewer, { csrf, action, days: '5', scope: 'selected', keys: keys.join(' '), confirm: 'yes' });
      expect(res.status, action).toBe(403);
      expect(textOf(res.body)).toContain('does not allow this');
    }
    expect((await all()).size).toBe(4);
    expect([...(await all()).values()].some((l) => l.revoked || l.expiresAt !== Date.parse(EXPIRY))).toBe(false);
    const { browser: support } = await addMember(ctx, owner, 'support');
    await support.request('GET', '/dashboard/licenses');
    const done = await post(support, { action: 'revoke', scope: 'selected', keys: keys[0]!, confirm: 'yes' });
    expect(textOf(done.body)).toContain('Revoked 1 license.');
  });

  it("another account's keys in a forged selection are skipped as not found, never touched", async () => {
    const other = await createTenant(ctx);
    const theirs = (await createLicense(ctx, other, (await createProduct(ctx, other)).id, { type: 'timed', expiresAt: EXPIRY, email: 'x@example.com' })).key;
    for (const action of ['revoke', 'extend', 'email', 'delete']) {
      const res = await post(owner, { action, days: '5', scope: 'selected', keys: theirs, confirm: 'yes' });
      expect(textOf(res.body), action).toContain('Skipped 1: 1 not found.');
    }
    const csv = await post(owner, { action: 'export', scope: 'selected', keys: theirs });
    expect(csv.body.trim().split('\r\n')).toHaveLength(1);
    const them = (await all(other)).get(theirs)!;
    expect([them.revoked, them.expiresAt]).toEqual([false, Date.parse(EXPIRY)]);
    expect(await outboxFor(ctx.store, 'x@example.com')).toEqual([]);
  });
});

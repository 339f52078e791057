import { describe, expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport, openPrivateSession, outboxFor, PortalBrowser, portalLinkIn } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

/** Issue 14, items 2, 6, 7 and 8: the attacks on the portal, each replayed. */
forEachStore('portal hardening', (kind) => {
  describe('sessions, links and CSRF', () => {
    const transport = new CapturingTransport();
    const ctx = useTestApp(kind, { app: { mail: { transport } } });

    it('signing out ends the e-mailed link: the token (from a log or the history) opens nothing after', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'signout-link@example.com' });
      await new PortalBrowser(ctx).requestLink('signout-link@example.com');
      const link = portalLinkIn(await transport.waitFor('signout-link@example.com', 'portal_link'));
      const scanner = new PortalBrowser(ctx); // a mail scanner opened it first
      expect((await scanner.open(link)).status).toBe(200);
      const person = new PortalBrowser(ctx);
      expect((await person.open(link)).status).toBe(200);
      expect((await person.request('POST', '/portal/logout', { csrf: person.csrf })).status).toBe(303);
      expect((await new PortalBrowser(ctx).open(link)).status).toBe(400);
      // Every session opened from the link ended with it.
      expect((await scanner.request('GET', '/portal')).headers.location).toBe('/portal/request?notice=session-ended');
    });

    it('signing out of a private session ends its link too', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'signout-private@example.com' });
      const { browser, url } = await openPrivateSession(ctx, t.auth, 'signout-private@example.com');
      expect((await new PortalBrowser(ctx).open(url)).status).toBe(200);
      await browser.request('POST', '/portal/logout', { csrf: browser.csrf });
      const again = await new PortalBrowser(ctx).open(url);
      expect(again.status).toBe(400);
      expect(again.body).not.toContain('signout-private@example.com');
    });

    it("refuses one visitor's CSRF cookie and token with another visitor's session (cookie injection)", async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t, { portalAllowDeviceReset: true });
      const victimLicense = await createLicense(ctx, t, product.id, { email: 'csrf-victim@example.com' });
      await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...t.auth, 'license-key': victimLicense.key }, json: { productId: product.id, device: { identifier: 'v1', name: 'V' } } });
      await createLicense(ctx, t, product.id, { email: 'csrf-attacker@example.com' });
      const { browser: attacker } = await openPrivateSession(ctx, t.auth, 'csrf-attacker@example.com');
      const { browser: victim } = await openPrivateSession(ctx, t.auth, 'csrf-victim@example.com');
      // The attacker's own pair, planted in the victim's browser beside the victim's session.
      const planted = `tessera_portal=${victim.cookie('tessera_portal')}; tessera_csrf=${attacker.cookie('tessera_csrf')}`;
      for (const [url, form] of [
        ['/portal/licenses/reset', `key=${victimLicense.key}&csrf=${encodeURIComponent(attacker.csrf)}`],
        ['/portal/logout', `csrf=${encodeURIComponent(attacker.csrf)}`],
      ] as const) {
        const res = await ctx.app.inject({ method: 'POST', url, headers: { cookie: planted, 'content-type': 'application/x-www-form-urlencoded' }, payload: form });
        expect(res.statusCode, url).toBe(403);
      }
      const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': victimLicense.key } });
      expect(stored.body.activeDevices).toHaveLength(1);
      expect((await victim.request('GET', '/portal')).status).toBe(200);
      // The victim's own pair still works.
      expect((await victim.request('POST', '/portal/licenses/reset', { key: victimLicense.key, confirm: 'yes', csrf: victim.csrf })).status).toBe(303);
    });

    it('pages the devices of a license with many: the portal page stays small, every device is reachable', async () => {
      const t = await createTenant(ctx);
      const product = await createProduct(ctx, t, { name: 'Fleet' });
      const license = await createLicense(ctx, t, product.id, { email: 'fleet@example.com', maxDevices: 5000 });
      const rows = Array.from({ length: 3000 }, (_, i) => ({ license_key: license.key, identifier: `fleet-${String(i).padStart(4, '0')}`, name: 'Box', activation_date: 1_700_000_000_000 + i }));
      await ctx.store.write(async (tx) => {
        for (let i = 0; i < rows.length; i += 500) await tx.run(ctx.store.db.insertInto('devices').values(rows.slice(i, i + 500)));
      });
      const { browser } = await openPrivateSession(ctx, t.auth, 'fleet@example.com');
      const page = browser.lastHtml;
      expect(page.length).toBeLessThan(30_000);
      expect(page).toContain('3000 in use');
      expect(page).toContain('fleet-0019');
      expect(page).not.toContain('fleet-0020');
      expect(page).toContain('Showing the first 20 of 3000 devices');
      const seen: string[] = [];
      let href: string | undefined = `/portal/licenses/${license.key}/devices`;
      while (href) {
        const res = await browser.request('GET', href.replaceAll('&amp;', '&'));
        expect(res.status).toBe(200);
        expect(res.body.length).toBeLessThan(30_000);
        seen.push(...[...res.body.matchAll(/fleet-\d{4}/g)].map((m) => m[0]));
        href = /rel="next" href="([^"]+)"/.exec(res.body)?.[1];
      }
      expect(seen).toEqual(rows.map((r) => r.identifier));
      expect((await browser.request('GET', `/portal/licenses/${license.key}/devices?page=61`)).status).toBe(404);
      // Another address's license is not there, whatever its key.
      const other = await createLicense(ctx, t, product.id, { email: 'someone-else@example.com' });
      expect((await browser.request('GET', `/portal/licenses/${other.key}/devices`)).status).toBe(404);
    }, 60_000);

    it('sends the link to the address that was checked: the Kelvin sign does not reach known5@ (and is refused)', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'known5@known.test' });
      const kelvin = '\u212Anown5@known.test';
      const res = await new PortalBrowser(ctx).requestLink(kelvin);
      expect(res.status).toBe(400);
      expect(await outboxFor(ctx.store, kelvin)).toEqual([]);
      expect(await outboxFor(ctx.store, 'known5@known.test')).toEqual([]);
      // The same address in other letter case: one normalized address, for lookup and delivery.
      expect((await new PortalBrowser(ctx).requestLink('  KNOWN5@Known.Test ')).status).toBe(200);
      expect((await transport.waitFor('known5@known.test', 'portal_link')).to).toBe('known5@known.test');
      expect(await outboxFor(ctx.store, 'KNOWN5@Known.Test')).toEqual([]);
    });
  });

  describe('link limits a third party cannot turn against the owner', () => {
    const transport = new CapturingTransport();
    const ctx = useTestApp(kind, {
      env: { RATE_LIMIT: 'on', RATE_LIMIT_PORTAL_LINKS_PER_CLIENT_PER_HOUR: '100', RATE_LIMIT_PORTAL_LINKS_ALL_CLIENTS_PER_ADDRESS_PER_HOUR: '12' },
      app: { mail: { transport } },
    });

    async function requestFrom(ip: string, email: string) {
      const form = await ctx.app.inject({ method: 'GET', url: '/portal/request', remoteAddress: ip });
      const csrfCookie = String(form.headers['set-cookie']).split(';')[0]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
      return ctx.app.inject({
        method: 'POST',
        url: '/portal/request',
        remoteAddress: ip,
        headers: { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `email=${encodeURIComponent(email)}&csrf=${csrf}`,
      });
    }

    it("an attacker spends only its own quota for an address; the owner's link still goes out", async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'owner@example.com' });
      const attacker: number[] = [];
      for (let i = 0; i < 8; i++) attacker.push((await requestFrom('203.0.113.66', 'owner@example.com')).statusCode);
      expect(attacker).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      const owner = await requestFrom('198.51.100.7', 'owner@example.com');
      expect(owner.statusCode).toBe(200);
      expect((await outboxFor(ctx.store, 'owner@example.com')).length).toBe(6);
    });

    it('caps one address across all clients (mailbox flooding), with its own message', async () => {
      const t = await createTenant(ctx);
      await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'flooded@example.com' });
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 13; i++) {
        last = await requestFrom(`192.0.2.${i + 1}`, 'flooded@example.com');
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([...Array(12).fill(200), 429]);
      expect(last!.body).toContain('Too many links were requested for this address');
      expect((await outboxFor(ctx.store, 'flooded@example.com')).length).toBe(12);
    });
  });
});

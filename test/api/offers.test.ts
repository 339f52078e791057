import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, type Tenant } from '../support/app.ts';
import { activateDevice } from '../support/mail.ts';
import { connectStripe, deliver, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';
import { signedEvent, stripeObjects } from '../support/stripe-double.ts';

const DAY = 86_400_000;
let n = 0;

forEachStore('offers: renewals and upgrades', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;
  const offer = (t: Tenant, productId: string, body: Record<string, unknown>) => call(p.ctx, { method: 'POST', url: `/api/v1/products/${productId}/offers`, headers: t.auth, json: body });
  const licenseView = async (t: Tenant, key: string) => (await call(p.ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': key } })).body;

  async function setup() {
    const t = await createTenant(p.ctx);
    const c = await connectStripe(p, t);
    const product = await createProduct(p.ctx, t, { name: 'Desk App' });
    return { t, c, product };
  }
  /** A completed checkout of `priceId` whose metadata names the license. */
  function checkout(c: { key: string; secret: string }, priceId: string, metadata: Record<string, string>) {
    const session = double.session(c.key, [{ priceId }]);
    const object = { ...stripeObjects.checkoutSession({ id: session, email: `renewer${++n}@example.com` }), metadata };
    return signedEvent(c.secret, 'checkout.session.completed', object);
  }

  it('creates, lists and deletes offers; at most 3 of each kind; bad input is a 400 and stores nothing', async () => {
    const { t, product } = await setup();
    const other = await createProduct(p.ctx, t, { name: 'Desk App Pro' });
    for (let i = 0; i < 3; i++) expect((await offer(t, product.id, { kind: 'renewal', name: `${i + 1} year`, priceId: `price_r${i}`, extendDays: 365 * (i + 1) })).status).toBe(200);
    const fourth = await offer(t, product.id, { kind: 'renewal', name: 'too many', priceId: 'price_r9', extendDays: 30 });
    expect(fourth.status).toBe(400);
    const up = await offer(t, product.id, { kind: 'upgrade', name: 'Pro', priceId: 'price_up', productId: other.id, maxDevices: 5, licenseType: 'perpetual' });
    expect(up.body).toMatchObject({ kind: 'upgrade', extendDays: null, upgrade: { productId: other.id, maxDevices: 5, licenseType: 'perpetual' } });
    for (const bad of [
      { kind: 'renewal', name: 'x', priceId: 'price_b1' },
      { kind: 'renewal', name: 'x', priceId: 'price_b2', extendDays: 10, maxDevices: 3 },
      { kind: 'upgrade', name: 'x', priceId: 'price_b3' },
      { kind: 'upgrade', name: 'x', priceId: 'price_b4', extendDays: 3, maxDevices: 2 },
      { kind: 'upgrade', name: 'x', priceId: 'price_b5', productId: 'p_nosuchproduct' },
      { kind: 'upgrade', name: 'x', priceId: 'price_up', maxDevices: 9 },
      { kind: 'gift', name: 'x', priceId: 'price_b6', extendDays: 3 },
      { kind: 'renewal', name: 'x', priceId: 'price_b7', extendDays: 0 },
    ]) expect((await offer(t, product.id, bad)).status, JSON.stringify(bad)).toBe(400);
    const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/offers`, headers: t.auth });
    expect(list.body).toHaveLength(4);
    const stranger = await createTenant(p.ctx);
    expect((await offer(stranger, product.id, { kind: 'renewal', name: 'x', priceId: 'price_s', extendDays: 3 })).status).toBe(404);
    expect((await call(p.ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/offers/${up.body.id}`, headers: stranger.auth })).status).toBe(404);
    expect((await call(p.ctx, { method: 'DELETE', url: `/api/v1/products/${product.id}/offers/${up.body.id}`, headers: t.auth })).status).toBe(200);
    expect((await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/offers`, headers: t.auth })).body).toHaveLength(3);
  });

  it('a renewal checkout extends from the later of now and the expiry, once under 10 concurrent redeliveries; one e-mail; a purchase of kind renewal', async () => {
    const { t, c, product } = await setup();
    const price = double.price(c.key);
    await offer(t, product.id, { kind: 'renewal', name: '1 year', priceId: price, extendDays: 365 });
    const expiry = Date.now() + 10 * DAY;
    const license = await createLicense(p.ctx, t, product.id, { type: 'timed', expiresAt: new Date(expiry).toISOString(), email: 'owner@example.com' });
    const event = checkout(c, price, { tessera_license_key: license.key });
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(p.ctx, c.connectionId, event)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const after = await licenseView(t, license.key);
    expect(Date.parse(after.expiresAt)).toBe(expiry + 365 * DAY);
    const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data;
    expect(purchases).toMatchObject([{ kind: 'renewal', status: 'fulfilled', licenseKeys: [license.key] }]);
    const rows = await p.ctx.store.read.all(p.ctx.store.db.selectFrom('outbox').select('payload').where('kind', '=', 'mail'));
    expect(rows.filter((r) => JSON.parse(r.payload).kind === 'license_renewal')).toHaveLength(1);
    const events = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...t.auth, 'license-key': license.key } });
    expect(events.body.data[0]).toMatchObject({ type: 'license.updated', actor: { type: 'provider', provider: 'stripe' } });
  });

  it('an expired license renews from now; an upgrade (keyforge_license_key) moves product, devices and type, keeping key and devices', async () => {
    const { t, c, product } = await setup();
    const renew = double.price(c.key);
    await offer(t, product.id, { kind: 'renewal', name: '30 days', priceId: renew, extendDays: 30 });
    const expired = await createLicense(p.ctx, t, product.id, { type: 'timed', expiresAt: new Date(Date.now() - 100 * DAY).toISOString() });
    const before = Date.now();
    await deliver(p.ctx, c.connectionId, checkout(c, renew, { tessera_license_key: expired.key }));
    const renewed = Date.parse((await licenseView(t, expired.key)).expiresAt);
    expect(renewed).toBeGreaterThanOrEqual(before + 30 * DAY);
    expect(renewed).toBeLessThan(Date.now() + 30 * DAY + 1000);

    const pro = await createProduct(p.ctx, t, { name: 'Desk App Pro' });
    const upgrade = double.price(c.key);
    await offer(t, product.id, { kind: 'upgrade', name: 'Pro', priceId: upgrade, productId: pro.id, maxDevices: 10, licenseType: 'perpetual' });
    const license = await createLicense(p.ctx, t, product.id, { type: 'timed', expiresAt: new Date(Date.now() + DAY).toISOString() });
    await activateDevice(p.ctx, t.auth, license.key, product.id, 'laptop');
    expect((await deliver(p.ctx, c.connectionId, checkout(c, upgrade, { keyforge_license_key: license.key }))).status).toBe(200);
    const after = await licenseView(t, license.key);
    expect(after).toMatchObject({ key: license.key, productId: pro.id, maxDevices: 10, type: 'perpetual', expiresAt: null });
    expect(after.activeDevices.map((d: { identifier: string }) => d.identifier)).toEqual(['laptop']);
  });

  it('an upgrade may set entitlements: shown in its view; bad codes, or entitlements on a renewal, are a 400 and store nothing', async () => {
    const { t, product } = await setup();
    const up = await offer(t, product.id, { kind: 'upgrade', name: 'Pro features', priceId: 'price_ent', entitlements: ['pro', 'export.pdf', 'pro'] });
    expect(up.status).toBe(200);
    expect(up.body.upgrade).toEqual({ productId: null, maxDevices: null, licenseType: null, entitlements: ['pro', 'export.pdf'] });
    const none = await offer(t, product.id, { kind: 'upgrade', name: 'Basic', priceId: 'price_none', entitlements: [] });
    expect(none.body.upgrade.entitlements).toEqual([]);
    const plain = await offer(t, product.id, { kind: 'upgrade', name: 'More seats', priceId: 'price_seats', maxDevices: 4 });
    expect(plain.body.upgrade.entitlements).toBeNull();
    for (const [bad, path] of [
      [{ kind: 'renewal', name: 'x', priceId: 'price_e1', extendDays: 30, entitlements: ['pro'] }, 'entitlements'],
      [{ kind: 'upgrade', name: 'x', priceId: 'price_e2', entitlements: ['Pro'] }, 'entitlements'],
      [{ kind: 'upgrade', name: 'x', priceId: 'price_e3', entitlements: ['has space'] }, 'entitlements'],
      [{ kind: 'upgrade', name: 'x', priceId: 'price_e4', entitlements: Array.from({ length: 101 }, (_, i) => `f${i}`) }, 'entitlements'],
      [{ kind: 'upgrade', name: 'x', priceId: 'price_e5', entitlements: 'pro' }, 'entitlements'],
    ] as const) {
      const answer = await offer(t, product.id, bad);
      expect(answer.status, JSON.stringify(bad).slice(0, 80)).toBe(400);
      expect(answer.body.error.code).toBe('invalid_request');
      expect(JSON.stringify(answer.body.error.issues ?? answer.body.error)).toContain(path);
    }
    const list = await call(p.ctx, { method: 'GET', url: `/api/v1/products/${product.id}/offers`, headers: t.auth });
    expect(list.body.map((o: { priceId: string }) => o.priceId).sort()).toEqual(['price_ent', 'price_none', 'price_seats']);
  });

  it("an upgrade's completion sets exactly its entitlements; an upgrade without them, even one that moves product, keeps the license's own", async () => {
    const { t, c, product } = await setup();
    const features = double.price(c.key);
    await offer(t, product.id, { kind: 'upgrade', name: 'Pro features', priceId: features, entitlements: ['pro', 'export.pdf'] });
    const license = await createLicense(p.ctx, t, product.id, { type: 'perpetual', entitlements: ['basic', 'export.csv'] });
    expect((await deliver(p.ctx, c.connectionId, checkout(c, features, { tessera_license_key: license.key }))).status).toBe(200);
    expect((await licenseView(t, license.key)).entitlements).toEqual(['pro', 'export.pdf']);
    const events = await call(p.ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...t.auth, 'license-key': license.key } });
    expect(events.body.data[0]).toMatchObject({ type: 'license.updated', changes: { entitlements: { from: ['basic', 'export.csv'], to: ['pro', 'export.pdf'] } } });
    const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data;
    expect(purchases).toMatchObject([{ kind: 'upgrade', status: 'fulfilled', licenseKeys: [license.key] }]);

    const pro = await createProduct(p.ctx, t, { name: 'Desk App Pro', defaultEntitlements: ['everything'] });
    const move = double.price(c.key);
    await offer(t, product.id, { kind: 'upgrade', name: 'Move to Pro', priceId: move, productId: pro.id });
    const other = await createLicense(p.ctx, t, product.id, { type: 'perpetual', entitlements: ['basic'] });
    await deliver(p.ctx, c.connectionId, checkout(c, move, { tessera_license_key: other.key }));
    expect(await licenseView(t, other.key)).toMatchObject({ productId: pro.id, entitlements: ['basic'] });
  });

  it("another account's key, or a price that is no offer of the license's product: nothing changes, the purchase is kept unmatched", async () => {
    const { t, c, product } = await setup();
    const price = double.price(c.key);
    await offer(t, product.id, { kind: 'renewal', name: '1 year', priceId: price, extendDays: 365 });
    const other = await setup();
    const theirs = await createLicense(p.ctx, other.t, other.product.id, { type: 'timed', expiresAt: '2030-01-01' });
    await deliver(p.ctx, c.connectionId, checkout(c, price, { tessera_license_key: theirs.key }));
    expect((await licenseView(other.t, theirs.key)).expiresAt).toBe('2030-01-01T00:00:00.000Z');
    const mine = await createLicense(p.ctx, t, product.id, { type: 'timed', expiresAt: '2030-01-01' });
    await deliver(p.ctx, c.connectionId, checkout(c, double.price(c.key), { tessera_license_key: mine.key }));
    expect((await licenseView(t, mine.key)).expiresAt).toBe('2030-01-01T00:00:00.000Z');
    const purchases = (await call(p.ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: t.auth })).body.data;
    expect(purchases.map((pu: { status: string; licenseKeys: string[] }) => [pu.status, pu.licenseKeys])).toEqual([
      ['unmatched', []],
      ['unmatched', []],
    ]);
  });
});

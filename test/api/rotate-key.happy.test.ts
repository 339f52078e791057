import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('key rotation', (kind) => {
  const ctx = useTestApp(kind);
  const rotate = (auth: Record<string, string>, key: string, json?: unknown) =>
    call(ctx, { method: 'POST', url: '/api/v1/licenses/rotate-key', headers: { ...auth, 'license-key': key }, ...(json === undefined ? {} : { json }) });

  it('gives a new key; devices, entitlements, metadata and the audit log stay; the old key is unknown everywhere', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { maxDevices: 3, entitlements: ['pro'], metadata: { crm: '7' }, email: 'c@example.com' });
    await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc', deviceName: 'PC' } });
    const res = await rotate(t.auth, l.key);
    expect(res.status).toBe(200);
    const next = res.body.key;
    expect(next).toMatch(/^[A-HJ-NP-Z2-9]{5}(-[A-HJ-NP-Z2-9]{5}){4}$/);
    expect(next).not.toBe(l.key);
    expect(res.body).toMatchObject({ productId: p.id, maxDevices: 3, entitlements: ['pro'], metadata: { crm: '7' }, createdAt: l.createdAt, activeDevices: [{ identifier: 'pc' }] });
    // The device keeps working under the new key, without activating again.
    const valid = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: next, productId: p.id, deviceIdentifier: 'pc' } });
    expect(valid.body.isValid).toBe(true);
    const old = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: 'pc' } });
    expect(old.body).toMatchObject({ isValid: false, reason: 'not_found' });
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } })).status).toBe(404);
    const events = await call(ctx, { method: 'GET', url: '/api/v1/licenses/events', headers: { ...t.auth, 'license-key': next } });
    const types = events.body.data.map((e: { type: string }) => e.type);
    expect(types).toEqual(expect.arrayContaining(['license.created', 'device.activated', 'license.updated']));
    expect(events.body.data[0]).toMatchObject({ type: 'license.updated', changes: { key: { from: l.key, to: next } } });
  });

  it('notify: true queues the e-mail with the new key; without an address it is a 400 and nothing changes', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { email: 'rotated@example.com' });
    const res = await rotate(t.auth, l.key, { notify: true });
    const jobs = await ctx.store.read.all(ctx.store.db.selectFrom('outbox').select('payload').where('kind', '=', 'mail'));
    expect(jobs.some((j) => j.payload.includes(res.body.key) && j.payload.includes('rotated@example.com'))).toBe(true);
    const bare = await createLicense(ctx, t, p.id);
    const refused = await rotate(t.auth, bare.key, { notify: true });
    expect(refused.status).toBe(400);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': bare.key } })).status).toBe(200);
  });

  it("another account's license is a 404 and keeps its key", async () => {
    const owner = await createTenant(ctx);
    const other = await createTenant(ctx);
    const p = await createProduct(ctx, owner);
    const l = await createLicense(ctx, owner, p.id);
    expect((await rotate(other.auth, l.key)).status).toBe(404);
    expect((await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...owner.auth, 'license-key': l.key } })).status).toBe(200);
  });
});

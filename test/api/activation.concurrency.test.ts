import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('concurrent activations', (kind) => {
  const ctx = useTestApp(kind);
  const activate = (licenseKey: string, productId: string, deviceIdentifier: string) =>
    call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey, productId, deviceIdentifier, deviceName: 'n' } });
  const devicesOf = async (key: string) => ctx.store.read.all(ctx.store.db.selectFrom('devices').selectAll().where('license_key', '=', key));

  it('never exceeds maxDevices when 100 devices activate at once', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { maxDevices: 7 });
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => activate(l.key, p.id, `device-${i}`)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(7);
    expect(results.filter((r) => r.body?.error?.code === 'max_devices_reached')).toHaveLength(93);
    const stored = await devicesOf(l.key);
    expect(stored).toHaveLength(7);
    expect(new Set(stored.map((d) => d.identifier))).toEqual(new Set(ok.map((r) => r.body.device.identifier)));
  });

  it('never duplicates a device activated 50 times at once, and it takes one slot', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { maxDevices: 2 });
    const results = await Promise.all(Array.from({ length: 50 }, () => activate(l.key, p.id, 'same-device')));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.device.activationDate)).size).toBe(1);
    expect(await devicesOf(l.key)).toHaveLength(1);
  });

  it('keeps each license to its own limit when many licenses are activated at once', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const licenses = await Promise.all(Array.from({ length: 10 }, () => createLicense(ctx, t, p.id, { maxDevices: 3 })));
    const results = await Promise.all(licenses.flatMap((l) => Array.from({ length: 8 }, (_, i) => activate(l.key, p.id, `d${i}`))));
    expect(results.filter((r) => r.status === 200)).toHaveLength(30);
    for (const l of licenses) expect(await devicesOf(l.key)).toHaveLength(3);
  });

  it('gives exactly 3 of 50 concurrent activations on a floating license with 3 seats', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t, { floating: { enabled: true, leaseSeconds: 600 } });
    const l = await createLicense(ctx, t, p.id, { maxDevices: 3 });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => activate(l.key, p.id, `container-${i}`)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(3);
    expect(results.filter((r) => r.body?.error?.code === 'max_devices_reached')).toHaveLength(47);
    const stored = await devicesOf(l.key);
    expect(stored).toHaveLength(3);
    expect(stored.every((d) => d.lease_expires_at !== null)).toBe(true);
  });

  it('a failing unit in a group commit does not undo the others', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const full = await createLicense(ctx, t, p.id, { maxDevices: 1 });
    const open = await createLicense(ctx, t, p.id, { maxDevices: 50 });
    await activate(full.key, p.id, 'only');
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? activate(full.key, p.id, `x${i}`) : activate(open.key, p.id, `y${i}`))),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(20);
    expect(await devicesOf(open.key)).toHaveLength(20);
    expect(await devicesOf(full.key)).toHaveLength(1);
  });
});

import { beforeAll, expect, it } from 'vitest';
import { createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../../../test/support/app.ts';
import { configureTokens } from '../../../test/support/license-tokens.ts';
import { forEachStore } from '../../../test/support/stores.ts';
import { hasEntitlement, LicenseClient, type PublicJwk } from '../src/index.ts';

forEachStore('client SDK: entitlements, floating heartbeats, trials', (kind) => {
  const ctx = useTestApp(kind);
  let baseUrl: string;
  let tenant: Tenant;

  beforeAll(async () => {
    baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    tenant = await createTenant(ctx);
  });

  it('hasEntitlement reads a validation and verified token claims', async () => {
    const p = await createProduct(ctx, tenant, { defaultEntitlements: ['pro', 'export.pdf'] });
    const publicKey = (await configureTokens(ctx, tenant, p.id)).publicKeyJwk as PublicJwk;
    const l = await createLicense(ctx, tenant, p.id);
    const client = new LicenseClient({ baseUrl, productId: p.id, publicKey });
    const activated = await client.activate({ licenseKey: l.key, deviceIdentifier: 'pc', deviceName: 'PC' });
    expect(activated.ok && hasEntitlement(activated.value.license, 'pro')).toBe(true);
    expect(activated.ok && hasEntitlement(activated.value.license, 'sso')).toBe(false);
    const state = await client.validateAndRefreshToken('pc');
    expect(state.valid && hasEntitlement(state.claims, 'export.pdf')).toBe(true);
  });

  it('heartbeat renews a floating lease; startHeartbeat schedules the next one from the lease and stops on demand', async () => {
    const p = await createProduct(ctx, tenant, { floating: { enabled: true, leaseSeconds: 60 } });
    const l = await createLicense(ctx, tenant, p.id);
    const client = new LicenseClient({ baseUrl, productId: p.id });
    await client.activate({ licenseKey: l.key, deviceIdentifier: 'vm', deviceName: 'VM' });
    const beat = await client.heartbeat({ licenseKey: l.key, deviceIdentifier: 'vm' });
    expect(beat.ok && beat.value.isValid && beat.value.device.leaseExpiresAt).toBeTruthy();
    const seen: boolean[] = [];
    const beats = client.startHeartbeat({ licenseKey: l.key, deviceIdentifier: 'vm' }, (r) => seen.push(r.ok && r.value.isValid));
    for (let i = 0; i < 100 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    beats.stop();
    expect(seen).toEqual([true]);
    const unknown = await client.heartbeat({ licenseKey: l.key, deviceIdentifier: 'ghost' });
    expect(unknown.ok && !unknown.value.isValid && unknown.value.reason).toBe('device_not_activated');
  });

  it('startTrial starts one trial and stores its token; a second is trial_already_used', async () => {
    const p = await createProduct(ctx, tenant, { trial: { enabled: true, days: 10 } });
    const publicKey = (await configureTokens(ctx, tenant, p.id)).publicKeyJwk as PublicJwk;
    const client = new LicenseClient({ baseUrl, productId: p.id, publicKey });
    const trial = await client.startTrial({ deviceIdentifier: 'laptop', deviceName: 'Laptop' });
    expect(trial.ok && trial.value.license).toMatchObject({ type: 'timed', trial: true });
    expect((await client.validateAndRefreshToken('laptop')).valid).toBe(true);
    const again = await client.startTrial({ deviceIdentifier: 'laptop', deviceName: 'Laptop' });
    expect(again.ok ? 'ok' : again.error.code).toBe('trial_already_used');
  });
});

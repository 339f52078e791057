import { expect, it } from 'vitest';
import { isLicenseEvent } from '../../src/core/events.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { importLicenseFile } from '../../src/modules/licenses/import-file.ts';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('license import', (kind) => {
  const ctx = useTestApp(kind);
  const importAs = (accountId: string, text: string, format: 'csv' | 'json', options = {}) => importLicenseFile(ctx.services.licenses, cliPrincipal(accountId), text, format, options);
  const getLicense = async (auth: Record<string, string>, key: string) => call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...auth, 'license-key': key } });

  it('imports CSV with keys in the hosted format, dates, revocation and devices kept; the keys work on the public API', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const devices = JSON.stringify([{ identifier: 'mac-01', name: 'Studio Mac', activationDate: '2025-03-02T10:00:00.000Z' }]).replaceAll('"', '""');
    const csv = [
      'key,productId,type,expiresAt,maxDevices,email,revoked,createdAt,devices,userId',
      // 0, O, 1 and I are not in this service's alphabet, but the hosted service's keys keep them.
      `k0o1i-ABCDE-FGHIJ-KLMNO-PQRST,${p.id},perpetual,,2,Buyer@Example.com,false,2024-01-15T08:30:00.000Z,"${devices}",ignored-uuid`,
      `ZZZZZ-22222-YYYYY-33333-XXXXX,${p.id},timed,2030-01-01,1,,true,2024-02-01,,`,
      '',
    ].join('\r\n');
    const report = await importAs(t.accountId, csv, 'csv');
    expect(report).toEqual({ ok: true, dryRun: false, rows: 2, created: 2, skipped: 0, errors: [] });

    const first = await getLicense(t.auth, 'K0O1I-ABCDE-FGHIJ-KLMNO-PQRST');
    expect(first.body).toEqual({
      key: 'K0O1I-ABCDE-FGHIJ-KLMNO-PQRST',
      userId: t.accountId,
      productId: p.id,
      type: 'perpetual',
      expiresAt: null,
      revoked: false,
      email: 'Buyer@Example.com',
      maxDevices: 2,
      activeDevices: [{ identifier: 'mac-01', name: 'Studio Mac', activationDate: '2025-03-02T10:00:00.000Z', lastSeenAt: null, leaseExpiresAt: null }],
      createdAt: '2024-01-15T08:30:00.000Z',
      entitlements: [],
      metadata: {},
      trial: false,
      subscription: null,
    });
    const second = await getLicense(t.auth, 'ZZZZZ-22222-YYYYY-33333-XXXXX');
    expect(second.body).toMatchObject({ type: 'timed', expiresAt: '2030-01-01T00:00:00.000Z', revoked: true, email: null, activeDevices: [], createdAt: '2024-02-01T00:00:00.000Z' });

    // The customer's app goes on working: the imported device validates, a second one activates, the revoked key is refused.
    const validate = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/validate', json: { licenseKey: 'k0o1i-abcde-fghij-klmno-pqrst', deviceIdentifier: 'mac-01', productId: p.id } });
    expect(validate.body).toMatchObject({ isValid: true, status: 'active', device: { activationDate: '2025-03-02T10:00:00.000Z' } });
    const activate = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: 'K0O1I-ABCDE-FGHIJ-KLMNO-PQRST', deviceIdentifier: 'pc-02', deviceName: 'PC', productId: p.id } });
    expect(activate.status).toBe(200);
    const full = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: 'K0O1I-ABCDE-FGHIJ-KLMNO-PQRST', deviceIdentifier: 'pc-03', deviceName: 'PC', productId: p.id } });
    expect(full.body.error.code).toBe('max_devices_reached');
    const revoked = await call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: 'ZZZZZ-22222-YYYYY-33333-XXXXX', deviceIdentifier: 'd', deviceName: 'n', productId: p.id } });
    expect(revoked.body.error.code).toBe('license_revoked');
  });

  it('imports JSON in the API\'s own License shape (activeDevices), as a listing of the hosted service gives it', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const json = JSON.stringify([
      { key: 'JSON1-AAAAA-BBBBB-CCCCC-DDDDD', userId: 'someone-else', productId: p.id, type: 'timed', expiresAt: '2031-05-06T07:08:09.000Z', revoked: false, email: null, maxDevices: 3, createdAt: '2023-12-31T23:59:59.999Z', activeDevices: [{ identifier: 'a', name: 'A', activationDate: '2024-01-01T00:00:00.000Z' }, { identifier: 'b', name: 'B', activationDate: '2024-06-01T00:00:00.000Z' }] },
      { key: 'JSON2-AAAAA-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: 1 },
    ]);
    expect(await importAs(t.accountId, json, 'json')).toMatchObject({ ok: true, created: 2 });
    const l = await getLicense(t.auth, 'JSON1-AAAAA-BBBBB-CCCCC-DDDDD');
    expect(l.body).toMatchObject({ userId: t.accountId, expiresAt: '2031-05-06T07:08:09.000Z', createdAt: '2023-12-31T23:59:59.999Z' });
    expect(l.body.activeDevices.map((d: { identifier: string; activationDate: string }) => [d.identifier, d.activationDate])).toEqual([['a', '2024-01-01T00:00:00.000Z'], ['b', '2024-06-01T00:00:00.000Z']]);
    // Without a createdAt, the license is created now; it lists with the others.
    const list = await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}/licenses`, headers: t.auth });
    expect(list.body.data.map((x: { key: string }) => x.key)).toEqual(['JSON1-AAAAA-BBBBB-CCCCC-DDDDD', 'JSON2-AAAAA-BBBBB-CCCCC-DDDDD']);
  });

  it('a dry run writes nothing; a re-run skips the keys already imported (idempotent), in batches', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const rows = Array.from({ length: 2500 }, (_, i) => ({ key: `BATCH-${String(i).padStart(5, '0')}-AAAAA-BBBBB-${kind === 'sqlite' ? 'SQLIT' : 'POSTG'}`, productId: p.id, type: 'perpetual', maxDevices: 2, devices: [{ identifier: `d${i}`, name: 'Device', activationDate: '2024-01-01' }] }));
    const dry = await importAs(t.accountId, JSON.stringify(rows.slice(0, 1000)), 'json', { dryRun: true });
    expect(dry).toEqual({ ok: true, dryRun: true, rows: 1000, created: 1000, skipped: 0, errors: [] });
    expect((await getLicense(t.auth, rows[0]!.key)).status).toBe(404);

    expect(await importAs(t.accountId, JSON.stringify(rows.slice(0, 1000)), 'json', { batchSize: 300 })).toMatchObject({ ok: true, created: 1000, skipped: 0 });
    const again = await importAs(t.accountId, JSON.stringify(rows), 'json', { batchSize: 1000 });
    expect(again).toEqual({ ok: true, dryRun: false, rows: 2500, created: 1500, skipped: 1000, errors: [] });
    const last = await getLicense(t.auth, rows[2499]!.key);
    expect(last.body.activeDevices).toEqual([{ identifier: 'd2499', name: 'Device', activationDate: '2024-01-01T00:00:00.000Z', lastSeenAt: null, leaseExpiresAt: null }]);
  }, 120_000);

  it('emits license.created and device.activated for each imported license, by the cli actor', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const seen: { type: string; actor: string; key: string; device?: string }[] = [];
    ctx.services.events.subscribe((event) => {
      if (isLicenseEvent(event) && event.license.accountId === t.accountId) seen.push({ type: event.type, actor: event.actor.type, key: event.license.key, ...('device' in event ? { device: event.device.identifier } : {}) });
    });
    const json = JSON.stringify([{ key: 'EVENT-AAAAA-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: 2, devices: [{ identifier: 'x', name: 'X' }] }]);
    await importAs(t.accountId, json, 'json');
    expect(seen).toEqual([
      { type: 'license.created', actor: 'cli', key: 'EVENT-AAAAA-BBBBB-CCCCC-DDDDD' },
      { type: 'device.activated', actor: 'cli', key: 'EVENT-AAAAA-BBBBB-CCCCC-DDDDD', device: 'x' },
    ]);
  });
});

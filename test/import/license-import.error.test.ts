import { expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { importLicenseFile, parseCsv } from '../../src/modules/licenses/import-file.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('license import: bad files and rows', (kind) => {
  const ctx = useTestApp(kind);
  const importAs = (accountId: string, text: string, format: 'csv' | 'json') => importLicenseFile(ctx.services.licenses, cliPrincipal(accountId), text, format);
  const exists = async (auth: Record<string, string>, key: string) => (await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...auth, 'license-key': key } })).status === 200;

  it('reports every bad CSV row with its line, field and reason, and imports nothing from the file', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const other = await createTenant(ctx);
    const foreign = await createProduct(ctx, other);
    const csv = [
      'Key,ProductId,Type,ExpiresAt,MaxDevices,Email,Revoked,CreatedAt,Devices',
      `GOOD1-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,,,`,
      `short-key,${p.id},perpetual,,1,,,,`,
      `BAD03-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},timed,,1,,,,`,
      `BAD04-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,2030-01-01,1,,,,`,
      `BAD05-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,0,,,,`,
      `BAD06-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,not-an-email,,,`,
      `BAD07-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,maybe,,`,
      `BAD08-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,,2999-01-01,`,
      `BAD09-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,,,"[{""identifier"":""a"",""name"":""A""},{""identifier"":""a"",""name"":""B""}]"`,
      `BAD10-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,,,{not json`,
      `BAD11-AAAAA-BBBBB-CCCCC-DDDDD,${foreign.id},perpetual,,1,,,,`,
      `GOOD1-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,,,`,
      `BAD13-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},forever,,1,,,,`,
      `BAD14-AAAAA-BBBBB-CCCCC-DDDDD,${p.id},perpetual,,1,,,,"[{""identifier"":""${'x'.repeat(97)}"",""name"":""A""}]"`,
      `BAD15,too,few`,
    ].join('\n');
    const report = await importAs(t.accountId, csv, 'csv');
    expect(report.ok).toBe(false);
    expect(report.created).toBe(0);
    // Lines: the header is line 1. Format errors (cell count, devices JSON) are found first, then the rules.
    expect(report.errors.map((e) => [('line' in e.at ? e.at.line : -1), e.field, e.message])).toEqual([
      [11, 'devices', expect.stringContaining('JSON array')],
      [16, undefined, 'has 3 cells; the header has 9'],
    ]);
    const fixed = csv.split('\n').filter((_, i) => i !== 10 && i !== 15).join('\n');
    const rules = await importAs(t.accountId, fixed, 'csv');
    expect(rules.errors.map((e) => ['line' in e.at ? e.at.line : -1, e.field, e.message])).toEqual([
      [3, 'key', expect.stringContaining('five groups of five')],
      [4, 'expiresAt', 'is required for a timed license'],
      [5, 'expiresAt', 'must be null for a perpetual license'],
      [6, 'maxDevices', 'must be an integer from 1 to 100000'],
      [7, 'email', 'must be an e-mail address'],
      [8, 'revoked', 'must be true or false'],
      [9, 'createdAt', 'must not be in the future'],
      [10, 'devices.1.identifier', 'appears twice on this license'],
      [11, 'productId', 'is not a product of this account'],
      [12, 'key', 'appears twice in this import'],
      [13, 'type', 'must be perpetual or timed'],
      [14, 'devices.0.identifier', 'must be 1 to 96 characters'],
    ]);
    expect(await exists(t.auth, 'GOOD1-AAAAA-BBBBB-CCCCC-DDDDD')).toBe(false);
  });

  it('reports bad JSON items by index; a hostile file (wrong types, not an array, not JSON) is an error, never a crash', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const items = [
      { key: 'OKAY1-AAAAA-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: 1 },
      'a string',
      { key: 12345, productId: p.id, type: 'perpetual', maxDevices: 1 },
      { key: 'WRONG-AAAAA-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: '5' },
      { key: 'WRONG-BBBBB-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'timed', expiresAt: 1735689600, maxDevices: 1 },
      { key: 'WRONG-CCCCC-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: 1, devices: 'mac-01' },
      { key: 'WRONG-DDDDD-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: 1, devices: [null] },
      { key: 'WRONG-EEEEE-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual', maxDevices: 1, devices: [{ identifier: 'a', name: 'A', activationDate: 'yesterday' }] },
    ];
    const shaped = await importAs(t.accountId, JSON.stringify(items), 'json');
    expect(shaped.errors).toEqual([{ at: { index: 1 }, message: 'must be an object' }]);
    const rules = await importAs(t.accountId, JSON.stringify(items.filter((_, i) => i !== 1)), 'json');
    expect(rules.errors.map((e) => ['index' in e.at ? e.at.index : -1, e.field])).toEqual([
      [1, 'key'],
      [2, 'maxDevices'],
      [3, 'expiresAt'],
      [4, 'devices'],
      [5, 'devices.0'],
      [6, 'devices.0.activationDate'],
    ]);
    expect(await exists(t.auth, 'OKAY1-AAAAA-BBBBB-CCCCC-DDDDD')).toBe(false);
    expect((await importAs(t.accountId, '{"key": "x"}', 'json')).errors[0]!.message).toMatch(/JSON array/);
    expect((await importAs(t.accountId, '[{', 'json')).errors[0]!.message).toMatch(/not valid JSON/);
    expect((await importAs(t.accountId, '', 'csv')).errors[0]!.message).toMatch(/header row/);
    expect((await importAs(t.accountId, 'key,product_id\n', 'csv')).errors[0]!.message).toMatch(/unknown column\(s\) product_id/);
    expect((await importAs(t.accountId, 'key,productId\n"unterminated,x\n', 'csv')).errors).toEqual([{ at: { line: 2 }, message: 'a quoted cell is never closed' }]);
  });

  it('refuses lone UTF-16 surrogates in any text of a row, as the API does, and imports nothing', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const row = (i: number, extra: object) => ({ key: `SURR${i}-AAAAA-BBBBB-CCCCC-DDDDD`, productId: p.id, type: 'perpetual', maxDevices: 5, ...extra });
    // JSON escapes are how a file carries them (UTF-8 cannot): "\ud800abc".
    const json = `[${[
      JSON.stringify(row(1, { devices: [{ identifier: 'fine', name: 'Fine' }] })),
      JSON.stringify(row(2, { devices: [{ identifier: 'ID', name: 'Laptop' }] })).replace('"ID"', '"\\ud800abc"'),
      JSON.stringify(row(3, { devices: [{ identifier: 'ok', name: 'NAME' }] })).replace('"NAME"', '"x\\udfff"'),
      JSON.stringify(row(4, { email: 'EMAIL' })).replace('"EMAIL"', '"a\\ud83d@example.com"'),
    ].join(',')}]`;
    expect(JSON.parse(json)[1].devices[0].identifier).toBe('\ud800abc');
    const report = await importAs(t.accountId, json, 'json');
    expect(report.ok).toBe(false);
    expect(report.errors.map((e) => ['index' in e.at ? e.at.index : -1, e.field, e.message])).toEqual([
      [1, 'devices.0.identifier', expect.stringContaining('well-formed Unicode')],
      [2, 'devices.0.name', expect.stringContaining('well-formed Unicode')],
      [3, 'email', expect.stringContaining('well-formed Unicode')],
    ]);
    expect(await exists(t.auth, 'SURR1-AAAAA-BBBBB-CCCCC-DDDDD')).toBe(false);
    // The service refuses them too, whoever calls it.
    await expect(ctx.services.licenses.importLicenses(cliPrincipal(t.accountId), [JSON.parse(json)[1]])).rejects.toMatchObject({ code: 'invalid_request', issues: [{ path: '0.devices.0.identifier' }] });
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('devices').select('identifier').where('license_key', 'like', 'SURR%'))).toEqual([]);
  });

  it("a key another account holds is refused (never overwritten); the caller's own existing key is skipped", async () => {
    const owner = await createTenant(ctx);
    const op = await createProduct(ctx, owner);
    const taken = await createLicense(ctx, owner, op.id);
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const json = JSON.stringify([{ key: taken.key, productId: p.id, type: 'perpetual', maxDevices: 1 }]);
    const refused = await importAs(t.accountId, json, 'json');
    expect(refused.errors).toEqual([{ at: { index: 0 }, key: taken.key, field: 'key', message: 'is already in use by another account' }]);
    const mine = await importAs(owner.accountId, JSON.stringify([{ key: taken.key.toLowerCase(), productId: op.id, type: 'timed', expiresAt: '2020-01-01', maxDevices: 9 }]), 'json');
    expect(mine).toMatchObject({ ok: true, created: 0, skipped: 1 });
    const after = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...owner.auth, 'license-key': taken.key } });
    expect(after.body).toMatchObject({ type: 'perpetual', maxDevices: taken.maxDevices });
  });

  it('the service refuses a bad list as a whole inside its unit (the path names the index)', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const good = { key: 'UNITA-AAAAA-BBBBB-CCCCC-DDDDD', productId: p.id, type: 'perpetual' as const, maxDevices: 1 };
    await expect(ctx.services.licenses.importLicenses(cliPrincipal(t.accountId), [good, { ...good, key: 'UNITB-AAAAA-BBBBB-CCCCC-DDDDD', maxDevices: 0 }])).rejects.toMatchObject({
      code: 'invalid_request',
      issues: [{ path: '1.maxDevices', message: 'must be an integer from 1 to 100000' }],
    });
    expect(await exists(t.auth, good.key)).toBe(false);
  });

  it('two imports of the same file at once create each license once; the loser reports its batch and a re-run finishes', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const json = JSON.stringify(Array.from({ length: 50 }, (_, i) => ({ key: `RACE${String.fromCharCode(65 + (i % 26))}-${String(i).padStart(5, '0')}-BBBBB-CCCCC-DDDDD`, productId: p.id, type: 'perpetual', maxDevices: 1 })));
    const [a, b] = await Promise.all([importAs(t.accountId, json, 'json'), importAs(t.accountId, json, 'json')]);
    expect(a.created + b.created).toBe(50);
    // A loser's batch (PostgreSQL, where both may find the keys free) says what happened, not the driver's words.
    for (const error of [...a.errors, ...b.errors]) {
      expect(error.message).toContain('was created meanwhile');
      expect(error.message).not.toMatch(/duplicate key|UNIQUE constraint|licenses_pkey/);
    }
    const list = await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}/licenses?limit=100`, headers: t.auth });
    expect(list.body.data).toHaveLength(50);
    expect(await importAs(t.accountId, json, 'json')).toMatchObject({ ok: true, created: 0, skipped: 50 });
  });
});

it('parses RFC 4180: quoted commas, doubled quotes, line breaks in cells, CRLF, and the line each record starts on', () => {
  expect(parseCsv('a,b\r\n"x, y","say ""hi"""\n"two\nlines",z')).toEqual({
    records: [
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['x, y', 'say "hi"'] },
      { line: 3, cells: ['two\nlines', 'z'] },
    ],
  });
});

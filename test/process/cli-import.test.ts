import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliPrincipal } from '../../src/core/principal.ts';
import { createServices } from '../../src/services.ts';
import { runCli } from '../support/server-process.ts';
import { createTestDatabase, forEachStore, type TestDatabase } from '../support/stores.ts';

forEachStore('operator CLI: license import', (kind) => {
  let db: TestDatabase;
  let dir: string;
  let productId: string;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
    dir = mkdtempSync(join(tmpdir(), 'tessera-import-'));
    const account = await runCli(db.env, ['account', 'create', '--email', 'owner@example.com', '--password', 'long enough password']);
    const store = await db.open();
    try {
      productId = (await createServices(store, Buffer.alloc(32)).products.create(cliPrincipal(account.json.userId), { name: 'Imported app' })).id;
    } finally {
      await store.close();
    }
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  });

  it('dry-runs, imports, re-runs (skipping) a CSV file, and reads JSON by its extension', async () => {
    const csv = join(dir, 'licenses.csv');
    writeFileSync(csv, `key,productId,type,expiresAt,maxDevices,email,revoked,createdAt,devices\nCLI01-AAAAA-BBBBB-CCCCC-DDDDD,${productId},perpetual,,2,a@example.com,false,2024-01-01,"[{""identifier"":""m1"",""name"":""Mac"",""activationDate"":""2024-02-01""}]"\n`);
    const args = ['import', '--email', 'owner@example.com', '--file', csv];
    const dry = await runCli(db.env, [...args, '--dry-run']);
    expect(dry).toMatchObject({ code: 0, json: { ok: true, dryRun: true, rows: 1, created: 1, skipped: 0, errors: [] } });
    expect(await runCli(db.env, args)).toMatchObject({ code: 0, json: { ok: true, dryRun: false, created: 1, skipped: 0 } });
    expect(await runCli(db.env, args)).toMatchObject({ code: 0, json: { ok: true, created: 0, skipped: 1 } });

    const json = join(dir, 'licenses.json');
    writeFileSync(json, JSON.stringify([{ key: 'CLI02-AAAAA-BBBBB-CCCCC-DDDDD', productId, type: 'timed', expiresAt: '2030-01-01', maxDevices: 1 }]));
    expect(await runCli(db.env, ['import', '--email', 'owner@example.com', '--file', json])).toMatchObject({ code: 0, json: { created: 1 } });
  }, 60_000);

  it('a file with a bad row exits 1 with the report on stdout and imports nothing; bad arguments are JSON errors', async () => {
    const csv = join(dir, 'bad.csv');
    writeFileSync(csv, `key,productId,type,maxDevices\nCLI03-AAAAA-BBBBB-CCCCC-DDDDD,${productId},perpetual,1\nCLI04-AAAAA-BBBBB-CCCCC-DDDDD,${productId},timed,1\n`);
    const bad = await runCli(db.env, ['import', '--email', 'owner@example.com', '--file', csv]);
    expect(bad.code).toBe(1);
    expect(bad.json).toEqual({ ok: false, dryRun: false, rows: 2, created: 0, skipped: 0, errors: [{ at: { line: 3 }, key: 'CLI04-AAAAA-BBBBB-CCCCC-DDDDD', field: 'expiresAt', message: 'is required for a timed license' }] });
    expect((await runCli(db.env, ['import', '--email', 'owner@example.com', '--file', csv, '--dry-run'])).json.created).toBe(0);

    const missing = await runCli(db.env, ['import', '--email', 'owner@example.com', '--file', join(dir, 'nope.csv')]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr).error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('ENOENT') });
    const format = await runCli(db.env, ['import', '--email', 'owner@example.com', '--file', csv, '--format', 'xml']);
    expect(JSON.parse(format.stderr).error.message).toBe('--format must be csv or json.');
    expect((await runCli(db.env, ['import', '--email', 'nobody@example.com', '--file', csv])).code).toBe(1);
    // A command name is looked up among the commands only, never on Object.prototype.
    expect((await runCli(db.env, ['toString'])).code).toBe(2);
  }, 60_000);
});

import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postJson, runCli, startServer } from '../support/server-process.ts';
import { openSqlite } from '../../src/storage/sqlite-binding.ts';

const keysIn = (file: string) => {
  const conn = openSqlite(file, { readonly: true });
  try {
    return new Set((conn.prepare('select key from licenses').all() as { key: string }[]).map((r) => r.key));
  } finally {
    conn.close();
  }
};

describe('SQLite backup and restore (CLI)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-backup-'));
  const env = { DATA_DIR: join(dir, 'data') };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('backs up while the server writes, refuses to restore under a running server, restores after it stopped', async () => {
    const server = await startServer(env);
    const backupFile = join(dir, 'backup.db');
    let backedUp: Set<string>;
    const acknowledged: string[] = [];
    try {
      await runCli(env, ['account', 'create', '--email', 'ops@example.com', '--password', 'long enough password']);
      const auth = { authorization: `Bearer ${(await runCli(env, ['api-key', 'create', '--email', 'ops@example.com'])).json.apiKey}` };
      const product = (await postJson(`${server.url}/api/v1/products`, { name: 'Backed up' }, auth)).body;
      let writing = true;
      const writer = async () => {
        while (writing) {
          const res = await postJson(`${server.url}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 1 }, auth);
          if (res.status === 200) acknowledged.push(res.body.key);
        }
      };
      const writers = [writer(), writer(), writer()];
      while (acknowledged.length < 30) await new Promise((r) => setImmediate(r));
      const before = acknowledged.length;
      const backup = await runCli(env, ['backup', '--to', backupFile]);
      const during = acknowledged.length;
      writing = false;
      await Promise.all(writers);
      expect(backup.code, backup.stderr).toBe(0);
      expect(backup.json).toEqual({ file: backupFile, bytes: expect.any(Number), migration: expect.stringMatching(/^\d{3}_/) });
      // Private like everything under DATA_DIR, whatever the CLI's umask (here the test runner's, 022).
      expect((statSync(backupFile).mode & 0o777).toString(8)).toBe('600');
      expect(during).toBeGreaterThan(before); // the server kept writing while the copy was taken
      backedUp = keysIn(backupFile);
      // Consistent: everything acknowledged before the backup began is in it, nothing that was never written.
      for (const key of acknowledged.slice(0, before)) expect(backedUp.has(key)).toBe(true);
      const all = new Set(acknowledged);
      for (const key of backedUp) expect(all.has(key)).toBe(true);

      const refused = await runCli(env, ['restore', '--from', backupFile]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('stop the server first');
      expect((await postJson(`${server.url}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 1 }, auth)).status).toBe(200);
    } finally {
      await server.stop();
    }

    const restored = await runCli(env, ['restore', '--from', backupFile]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(keysIn(join(env.DATA_DIR, 'tessera.db'))).toEqual(backedUp);

    // The restored store serves: a license from the backup is there, one written after it is not.
    const again = await startServer(env);
    try {
      const apiKey = (await runCli(env, ['api-key', 'create', '--email', 'ops@example.com'])).json.apiKey;
      const get = (key: string) => fetch(`${again.url}/api/v1/licenses`, { headers: { authorization: `Bearer ${apiKey}`, 'license-key': key } });
      expect((await get([...backedUp][0]!)).status).toBe(200);
      const missing = acknowledged.filter((k) => !backedUp.has(k));
      expect(missing.length).toBeGreaterThan(0);
      expect((await get(missing[0]!)).status).toBe(404);
    } finally {
      await again.stop();
    }
  }, 120_000);

  it('refuses a file that is not a Tessera database, an existing target, and PostgreSQL', async () => {
    const junk = join(dir, 'junk.db');
    writeFileSync(junk, 'not a database at all, just some text '.repeat(200));
    const notDb = await runCli(env, ['restore', '--from', junk]);
    expect(notDb.code).toBe(1);
    expect(JSON.parse(notDb.stderr).error.code).toBe('invalid_request');

    const otherDb = join(dir, 'other.db');
    const conn = openSqlite(otherDb);
    conn.exec('create table t (x)');
    conn.close();
    const other = await runCli(env, ['restore', '--from', otherDb]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('not a Tessera database');

    expect((await runCli(env, ['backup', '--to', otherDb])).stderr).toContain('exists');
    expect(existsSync(`${otherDb}.partial`)).toBe(false);
    const pg = await runCli({ ...env, DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x' }, ['backup', '--to', join(dir, 'pg.db')]);
    expect(pg.code).toBe(1);
    expect(pg.stderr).toContain('pg_dump');
    expect((await runCli(env, ['backup'])).stderr).toContain('--to is required');
  }, 60_000);
});

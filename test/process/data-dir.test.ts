import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postJson, runCli, startServer } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Every directory and file under `dir` with its mode and kind, e.g. {'.': {mode: 0o700, dir: true}}.
 * One stat each; a file gone between the listing and its stat (the outbox's temporary file, renamed
 * to its final name meanwhile) is left out: its final name is what stays.
 */
function modes(dir: string): Record<string, { mode: number; dir: boolean }> {
  const out: Record<string, { mode: number; dir: boolean }> = {};
  const visit = (rel: string) => {
    const stat = statSync(join(dir, rel), { throwIfNoEntry: false });
    if (!stat) return;
    out[rel] = { mode: stat.mode & 0o777, dir: stat.isDirectory() };
    if (stat.isDirectory()) for (const name of readdirSync(join(dir, rel))) visit(join(rel, name));
  };
  visit('.');
  return out;
}

/** Each path beside its mode in octal, as it is and as it should be (directories 700, files 600). */
const expectPrivate = (seen: ReturnType<typeof modes>) => {
  for (const [path, { mode, dir }] of Object.entries(seen)) expect([path, mode.toString(8)]).toEqual([path, (dir ? 0o700 : 0o600).toString(8)]);
};

describe('DATA_DIR (issue 14, items 4 and 12)', () => {
  const dirs: string[] = [];
  const newDataDir = () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'tessera-datadir-')), 'data');
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  it('creates every file 0600 and directory 0700, and fixes an existing install at start', async () => {
    const dataDir = newDataDir();
    // An older install: a world-readable directory with a readable queued e-mail in it.
    mkdirSync(join(dataDir, 'outbox'), { recursive: true, mode: 0o755 });
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'outbox'), 0o755);
    writeFileSync(join(dataDir, 'outbox', 'old.eml'), 'Subject: portal link\n\n/portal?token=x\n', { mode: 0o644 });
    const env = { DATA_DIR: dataDir, SECRET_KEY: '' }; // the key is generated into DATA_DIR/secret.key
    let server = await startServer(env);
    try {
      await runCli(env, ['account', 'create', '--email', 'modes@example.com', '--password', 'long enough password']);
      const apiKey = (await runCli(env, ['api-key', 'create', '--email', 'modes@example.com'])).json.apiKey;
      const auth = { authorization: `Bearer ${apiKey}` };
      const product = (await postJson(`${server.url}/api/v1/products`, { name: 'Modes' }, auth)).body;
      const license = await postJson(`${server.url}/api/v1/licenses`, { productId: product.id, type: 'perpetual', maxDevices: 2, email: 'buyer@example.com', sendEmail: true }, auth);
      expect(license.status).toBe(200);
      await waitFor(() => readdirSync(join(dataDir, 'outbox')).filter((f) => f.endsWith('.eml')).length === 2);
      const seen = modes(dataDir);
      for (const name of ['tessera.db', 'tessera.db-wal', 'tessera.db-shm', 'secret.key']) expect(Object.keys(seen)).toContain(name);
      expectPrivate(seen);
    } finally {
      await server.stop();
    }
    // Someone loosened them again: the next start puts them back before it serves.
    for (const [path, { dir }] of Object.entries(modes(dataDir))) chmodSync(join(dataDir, path), dir ? 0o755 : 0o644);
    server = await startServer(env);
    try {
      expectPrivate(modes(dataDir));
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('refuses a second server on the same DATA_DIR before migrations or workers; a killed holder frees it', async () => {
    const dataDir = newDataDir();
    const env = { DATA_DIR: dataDir };
    const first = await startServer(env);
    try {
      const second = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SECRET_KEY: 'a'.repeat(64), DATABASE_URL: '', DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      second.stdout.on('data', (d) => (output += d));
      second.stderr.on('data', (d) => (output += d));
      const [code] = (await once(second, 'exit')) as [number | null];
      expect(code).toBe(1);
      expect(output).toContain(`DATA_DIR ${dataDir} is in use by another Tessera process`);
      expect(output).not.toContain('Server listening');
      expect(output).not.toContain('outbox');
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await first.stop('SIGKILL')).toBe(null);
    }
    // kill -9 leaves no stale lock behind.
    expect(existsSync(join(dataDir, '.lock'))).toBe(true);
    const again = await startServer(env);
    expect((await fetch(`${again.url}/healthz`)).status).toBe(200);
    await again.stop();
  }, 60_000);
});

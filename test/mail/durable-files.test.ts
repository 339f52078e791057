import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DurableFiles } from '../../src/modules/mail/durable-files.ts';

describe('durable .eml files', () => {
  const root = mkdtempSync(join(tmpdir(), 'tessera-files-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('writes whole files, mode 0600, in a directory it makes (again) when missing, no temporary left', async () => {
    const files = new DurableFiles(join(root, 'outbox'));
    await files.write('a.eml', Buffer.from('first'));
    rmSync(files.dir, { recursive: true });
    await files.write('b.eml', Buffer.from('second'));
    expect(readdirSync(files.dir)).toEqual(['b.eml']);
    expect(readFileSync(join(files.dir, 'b.eml'), 'utf8')).toBe('second');
    expect(statSync(join(files.dir, 'b.eml')).mode & 0o777).toBe(0o600);
    expect(statSync(files.dir).mode & 0o777).toBe(0o700);
  });

  it('lands every file of many concurrent writes (sharing directory syncs)', async () => {
    const files = new DurableFiles(join(root, 'many'));
    const names = Array.from({ length: 40 }, (_, i) => `m-${i}.eml`);
    await Promise.all(names.map((name) => files.write(name, Buffer.from(name))));
    expect(readdirSync(files.dir).sort()).toEqual([...names].sort());
    for (const name of names) expect(readFileSync(join(files.dir, name), 'utf8')).toBe(name);
  });

  it('rejects when the file cannot be written, so the job is retried', async () => {
    const blocked = join(root, 'blocked');
    writeFileSync(blocked, 'a file where the directory should be');
    await expect(new DurableFiles(blocked).write('x.eml', Buffer.from('x'))).rejects.toMatchObject({ code: expect.stringMatching(/ENOTDIR|EEXIST/) });
  });
});

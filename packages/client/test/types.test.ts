import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, expect, it } from 'vitest';
import { ensureBuilt } from '../../../test/support/packages.ts';

const run = promisify(execFile);
const PACKAGE = join(import.meta.dirname, '..');
const TSC = join(import.meta.dirname, '../../../node_modules/typescript/bin/tsc');

beforeAll(() => ensureBuilt(PACKAGE), 120_000);

// The published declarations as apps compile them, without skipLibCheck: a Node or Electron-main
// app without the DOM typings (Node's webcrypto, its own storage), and a browser app (the global
// crypto, localStorage). Each fixture folder holds the app and its tsconfig.json.
it.each(['node', 'dom'])('a %s app compiles against the published declarations', async (kind) => {
  const outcome = await run(process.execPath, [TSC, '-p', join(import.meta.dirname, 'fixtures/types', kind)]).then(
    () => '',
    (error: { stdout?: string; message: string }) => error.stdout || error.message,
  );
  expect(outcome).toBe('');
}, 60_000);

/**
 * `npm install`'s last step (package.json's postinstall): builds better-sqlite3 only where the
 * store will load it, a Node without a usable node:sqlite (Node 20; docs/decisions/sqlite-binding.md).
 * package.json's allowScripts keeps npm from building it everywhere (a minute of C++ on Node 22
 * and 24, for an addon they never load); an npm without allowScripts (10) builds it by itself,
 * and then this finds it built.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bindingName } from '../src/storage/sqlite-binding.ts';

const require = createRequire(import.meta.url);

function loads(): boolean {
  try {
    const Database = require('better-sqlite3') as new (file: string) => { close(): void };
    new Database(':memory:').close();
    return true;
  } catch {
    return false;
  }
}

if (bindingName === 'better-sqlite3' && !loads()) {
  const dir = dirname(require.resolve('better-sqlite3/package.json'));
  // The package's own install step: a prebuilt binary for this Node where one can be fetched, else a build.
  const { scripts } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: { install: string } };
  console.log(`Node ${process.version} has no usable node:sqlite: building better-sqlite3 (${scripts.install})`);
  // The compiler's output only if it fails: a build's pages of warnings are nothing to act on.
  const built = spawnSync(scripts.install, { cwd: dir, shell: true, encoding: 'utf8' });
  if (built.status !== 0 || !loads()) {
    process.stdout.write(built.stdout ?? '');
    process.stderr.write(built.stderr ?? '');
    throw new Error('better-sqlite3 could not be built for this Node (a C++ compiler, make and python3 are needed when no prebuilt binary can be fetched); Node 22.16 or later needs none');
  }
}

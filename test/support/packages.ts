import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const newest = (dir: string): number =>
  Math.max(...readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => statSync(join(dir, f)).mtimeMs));

/** Builds a package with its own build script when dist/ is missing or older than what it is built from. */
export async function ensureBuilt(packageDir: string): Promise<void> {
  const output = join(packageDir, 'dist/index.js');
  const inputs = Math.max(newest(join(packageDir, 'src')), statSync(join(packageDir, 'tsconfig.build.json')).mtimeMs, statSync(join(packageDir, 'package.json')).mtimeMs);
  if (existsSync(output) && statSync(output).mtimeMs >= inputs) return;
  await run('npm', ['run', '--silent', 'build'], { cwd: packageDir, timeout: 120_000 });
}

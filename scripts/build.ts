/**
 * `npm run build` (and so `npm start`): src/ to dist/ as JavaScript, one module per source file as
 * tsc laid them out, with source maps. esbuild transpiles and does not type-check: that is
 * `npm run typecheck`'s job, which CI runs (docs/decisions/stack.md, "Build": tsc took 22 s for
 * every first start and 5 s for each later one; this takes well under one). Nothing is built when
 * dist/ is newer than every source file, this script and the lockfile (`--force` builds anyway).
 */
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
/** src/ and every folder in it: a file removed or renamed changes its folder's time. */
const folders = (dir: string): string[] => [dir, ...readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? folders(join(dir, e.name)) : []))];

const out = 'dist';
const stamp = join(out, '.built');
// A missing input counts as changed, a missing stamp as never built.
const mtime = (file: string, missing: number): number => statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? missing;
const inputs = [...sources('src'), ...folders('src'), 'scripts/build.ts', 'package-lock.json'];
const newest = Math.max(...inputs.map((file) => mtime(file, Number.POSITIVE_INFINITY)));
if (!process.argv.includes('--force') && newest < mtime(stamp, Number.NEGATIVE_INFINITY)) process.exit(0);

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: sources('src'),
  outdir: out,
  outbase: 'src',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  // Each file stays a module of its own: relative imports are kept, with the extension they have in dist/.
  bundle: true,
  plugins: [
    {
      name: 'keep-modules',
      setup(on) {
        on.onResolve({ filter: /^\.\.?\// }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path.replace(/\.ts$/, '.js'), external: true }));
        on.onResolve({ filter: /^[^./]/ }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path, external: true }));
      },
    },
  ],
});
writeFileSync(stamp, '');

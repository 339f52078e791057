/**
 * `npm run build` (and so `npm start`): src/ to dist/ as JavaScript, one module per source file as
 * tsc laid them out, with source maps. esbuild transpiles and does not type-check: that is
 * `npm run typecheck`'s job, which CI runs (docs/decisions/stack.md, "Build": tsc took 22 s for
 * every first start and 5 s for each later one; this takes well under one).
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );

const out = 'dist';
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

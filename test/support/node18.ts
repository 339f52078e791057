import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import type { TestContext } from './app.ts';
import { ensureBuilt } from './packages.ts';

// The SDKs (packages/*) promise Node 18+ (issue 3) and the project itself runs on Node 20: their
// node18 tests run the built package under a real Node 18 binary, given as NODE18_BIN (.ci/run
// installs one).

const run = promisify(execFile);

export interface Node18Package {
  /** Whether there is a Node 18 to run on: the test runs only then (`it.runIf`). */
  available: boolean;
  /** The test app (`ctx.app`), listening on 127.0.0.1 for the Node 18 process. */
  baseUrl: string;
  /** A server on 127.0.0.1 that accepts connections and never answers (time-outs), open for the block. */
  silentUrl: string;
  /**
   * Runs a fixture script under Node 18, in the package's folder (so it imports the built package
   * by name), with `params` as JSON in argv[2] and a clean environment: PATH, HOME and `env`,
   * nothing of this process's loaders (NODE_OPTIONS). Resolves with the JSON summary it prints on
   * its last stdout line.
   */
  run(script: string, options: { params: unknown; env?: Record<string, string> }): Promise<any>;
}

/**
 * For a describe block that runs `packageDir`'s built package under the Node 18 from NODE18_BIN,
 * against the block's test app (call after useTestApp). Without NODE18_BIN, `what`'s Node 18 test
 * is skipped with a warning, and under CI=true that is an error. In beforeAll, builds the package
 * when needed, makes the app listen and opens the silent server; closes that in afterAll.
 */
export function useNode18Package(what: string, packageDir: string, ctx: TestContext): Node18Package {
  const bin = process.env.NODE18_BIN;
  const available = bin !== undefined && bin !== '' && existsSync(bin);
  if (!available && process.env.CI === 'true') throw new Error(`CI must run the ${what} Node 18 test: NODE18_BIN (${bin ?? 'unset'}) is not a Node binary`);
  if (!available) console.warn(`\n[tessera tests] NODE18_BIN is not set: the ${what} NODE 18 test is SKIPPED (CI runs it).\n`);

  let silent: Server | undefined;
  const pkg: Node18Package = {
    available,
    baseUrl: '',
    silentUrl: '',
    async run(script, { params, env }) {
      const { stdout } = await run(bin!, [script, JSON.stringify(params)], {
        cwd: packageDir,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
        timeout: 60_000,
      });
      return JSON.parse(stdout.trim().split('\n').at(-1)!);
    },
  };
  beforeAll(async () => {
    if (!available) return;
    await ensureBuilt(packageDir);
    pkg.baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    pkg.silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  });
  afterAll(() => silent?.close());
  return pkg;
}

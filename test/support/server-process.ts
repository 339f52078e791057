import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Sends the signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const SECRET = 'a'.repeat(64);

/**
 * Starts `src/main.ts` as a real process on a free port and waits until it serves; `maxOpenFiles`
 * starts it under that `ulimit -n`; `stdoutFile` sends its stdout to that file instead of a pipe.
 */
export async function startServer(env: Record<string, string | undefined>, options: { maxOpenFiles?: number; stdoutFile?: string } = {}): Promise<ServerProcess> {
  const [command, args] =
    options.maxOpenFiles === undefined
      ? [process.execPath, ['--import', 'tsx', 'src/main.ts']]
      : ['/bin/sh', ['-c', `ulimit -n ${options.maxOpenFiles} && exec "$0" --import tsx src/main.ts`, process.execPath]];
  const stdoutFd = options.stdoutFile === undefined ? undefined : openSync(options.stdoutFile, 'a');
  const child = spawn(command, args, {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', RATE_LIMIT: 'off', LOG_LEVEL: 'info', SECRET_KEY: SECRET, DATABASE_URL: '', ...env },
    stdio: ['ignore', stdoutFd ?? 'pipe', 'pipe'],
  });
  if (stdoutFd !== undefined) closeSync(stdoutFd);
  let piped = '';
  child.stdout?.on('data', (d) => (piped += d));
  child.stderr!.on('data', (d) => (piped += d));
  const output = () => (options.stdoutFile === undefined ? piped : readFileSync(options.stdoutFile, 'utf8') + piped);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output()}`)), 30_000);
    const poll = setInterval(() => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output());
      if (match) {
        clearTimeout(timer);
        clearInterval(poll);
        resolve(match[1]!);
      }
    }, 20);
    child.once('exit', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(new Error(`server exited with ${code}:\n${output()}`));
    });
  });
  return {
    url,
    child,
    output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

/** Runs the operator CLI against a database and returns its JSON output. */
export async function runCli(env: Record<string, string | undefined>, args: string[]): Promise<{ code: number | null; json: any; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    env: { ...process.env, SECRET_KEY: SECRET, DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  let json: any;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, json, stdout, stderr };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

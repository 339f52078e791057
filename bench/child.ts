import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A server under test: a child process pinned to one core, with its memory read from /proc. */
export interface Child {
  pid: number;
  baseUrl: string;
  /**
   * Resident memory in MiB: now (VmRSS) and at its peak (VmHWM), and now split into anonymous
   * (the process's own: heap, stacks, SQLite's page cache; RssAnon) and file-backed pages (the
   * binary, libraries, a memory-mapped database: the OS's cache, which it may drop; RssFile).
   */
  memory(): { rssMiB: number; hwmMiB: number; anonMiB: number; fileMiB: number };
  /** CPU time the child has used so far (user + system), in seconds. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

export interface ChildOptions {
  /** Node's arguments: flags, loaders and the entry file. */
  args: string[];
  env: Record<string, string>;
  /** Core the child runs on (`taskset -c`); undefined runs it unpinned. */
  core?: number;
  /** Path answering 200 once the child serves. */
  readyPath: string;
  /**
   * Where the child's stdout goes (its logs): a file, as a log file or a journal would take it.
   * A pipe read by this process would charge the log's volume to the load generator's core.
   */
  stdoutFile?: string;
}

function statusField(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

// Clock ticks per second for /proc/<pid>/stat (USER_HZ, 100 on Linux).
const TICKS = 100;

/** CPU seconds of a process; with `children`, plus those of its children it has waited for (wrk). */
export function cpuSeconds(pid: number, children = false): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesized command name: utime and stime are the 12th and 13th, cutime and cstime the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = Number(fields[11]) + Number(fields[12]);
  return (children ? own + Number(fields[13]) + Number(fields[14]) : own) / TICKS;
}

async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${output()}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not get ready at ${url}:\n${output()}`);
}

/** A port the kernel says is free now (the machine runs other services on fixed ports). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export async function startChild(o: ChildOptions): Promise<Child> {
  const port = await freePort();
  // taskset execs node in place, so the child's pid is the server's pid.
  const [cmd, args] = o.core === undefined ? [process.execPath, o.args] : ['taskset', ['-c', String(o.core), process.execPath, ...o.args]];
  const stdoutFd = o.stdoutFile === undefined ? undefined : openSync(o.stdoutFile, 'a');
  const child = spawn(cmd, args, {
    env: { ...process.env, ...o.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', stdoutFd ?? 'pipe', 'pipe'],
  });
  if (stdoutFd !== undefined) closeSync(stdoutFd);
  let errors = '';
  const keep = (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-8000);
  };
  child.stdout?.on('data', keep);
  child.stderr!.on('data', keep);
  const tail = (text: string) => text.slice(-8000);
  const output = () => (o.stdoutFile === undefined ? errors : `${tail(readFileSync(o.stdoutFile, 'utf8'))}\n${errors}`);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitReady(baseUrl + o.readyPath, child, output);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const pid = child.pid!;
  // A server that died under load is the finding: say so with its last output.
  const alive = (): number => {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server ${pid} died (${child.signalCode ?? `exit ${child.exitCode}`}):\n${output()}`);
    }
    return pid;
  };
  return {
    pid,
    baseUrl,
    memory: () => {
      const id = alive();
      return { rssMiB: statusField(id, 'VmRSS'), hwmMiB: statusField(id, 'VmHWM'), anonMiB: statusField(id, 'RssAnon'), fileMiB: statusField(id, 'RssFile') };
    },
    cpuSeconds: () => cpuSeconds(alive()),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      if (child.exitCode !== 0 && child.signalCode === null) process.stderr.write(`server ${pid} exited ${child.exitCode}:\n${output()}\n`);
    },
  };
}

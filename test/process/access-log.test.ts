import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createTestDatabase } from '../support/stores.ts';
import { startServer } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';

const accessLines = (output: string, marker: string) => output.split('\n').filter((line) => line.includes('"msg":"request"') && line.includes(marker));

// A pipe (journald, Docker) goes through the asynchronous destination; a regular file is appended to directly.
it.each(['pipe', 'file'])('buffers access lines, writes them within a second, and loses none on SIGTERM (stdout a %s)', async (stdout) => {
  const database = await createTestDatabase('sqlite');
  const dir = mkdtempSync(join(tmpdir(), 'tessera-log-'));
  const server = await startServer(database.env, stdout === 'file' ? { stdoutFile: join(dir, 'server.log') } : {});
  try {
    // A quiet server's lines appear without more traffic (the periodic flush).
    await fetch(`${server.url}/healthz?round=first`);
    await waitFor(() => accessLines(server.output(), 'round=first').length === 1, { timeoutMs: 3000, message: 'the periodic flush' });

    // A burst whose lines are still in the buffer when the signal comes. Should a periodic flush
    // happen to write a whole round before we look, send another: the point is a signal that
    // finds unwritten lines.
    let round = 0;
    let sent = 0;
    for (;;) {
      round++;
      for (let i = 0; i < 5; i++, sent++) {
        const res = await fetch(`${server.url}/healthz?round=${round}-${i}&token=SECRET-${sent}`);
        expect(res.status).toBe(200);
      }
      if (accessLines(server.output(), `round=${round}-4`).length === 0) break;
      if (round > 20) throw new Error('every round was flushed before the signal; cannot test the shutdown flush');
    }
    expect(await server.stop('SIGTERM')).toBe(0);
    const output = server.output();
    for (let r = 1; r <= round; r++) {
      for (let i = 0; i < 5; i++) expect(accessLines(output, `round=${r}-${i}&`), `round ${r}, request ${i}`).toHaveLength(1);
    }
    expect(output).not.toContain('SECRET-');
    // In order: the shutdown lines come after the last request's.
    expect(output.indexOf(`round=${round}-4&`)).toBeLessThan(output.indexOf('shut down cleanly'));
  } finally {
    await server.stop('SIGKILL');
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

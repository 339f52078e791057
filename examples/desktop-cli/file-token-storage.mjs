import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** TokenStorage over one file, written atomically (a crash never leaves half a token), readable only by the user. */
export class FileTokenStorage {
  constructor(path) {
    this.path = path;
  }

  async get() {
    try {
      return readFileSync(this.path, 'utf8').trim() || null;
    } catch (error) {
      if (error.code === 'ENOENT') return null;
      throw error;
    }
  }

  async set(token) {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, `${token}\n`, { mode: 0o600 });
    renameSync(temporary, this.path);
  }

  async clear() {
    rmSync(this.path, { force: true });
  }
}

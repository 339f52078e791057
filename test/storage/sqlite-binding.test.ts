import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bindingName, onlineBackup, openSqlite } from '../../src/storage/sqlite-binding.ts';
import { isUniqueViolation } from '../../src/storage/constraint.ts';
import { useTempDirs } from '../support/temp-dirs.ts';

const tempDir = useTempDirs('tessera-binding-');

/**
 * The store's statements churn through its cache (500 texts) and the evicted ones are collected.
 * better-sqlite3 12 aborts the process there on Node 24.19 and later (nodejs/node#65446): a child
 * with --expose-gc prepares and drops thousands of statements through a store, collects them, and
 * must exit cleanly on the Node running the tests (CI runs them on 20, 22 and 24).
 */
const CHURN = `
import { sql } from 'kysely';
import { SqliteStore } from './src/storage/sqlite.ts';
import { bindingName } from './src/storage/sqlite-binding.ts';
const store = await SqliteStore.open(process.argv[1]);
for (let round = 0; round < 4; round++) {
  for (let i = 0; i < 1500; i++) await store.read.first(sql.raw(\`select \${round * 1500 + i} as n\`).compile(store.db));
  globalThis.gc();
  await new Promise((resolve) => setImmediate(resolve));
}
await store.close();
globalThis.gc();
console.log(JSON.stringify({ binding: bindingName, evicted: 'ok' }));
`;

describe(`SQLite binding (${bindingName} on Node ${process.version})`, () => {
  it('survives the garbage collection of thousands of evicted statements', () => {
    const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', CHURN, tempDir()], {
      cwd: join(import.meta.dirname, '../..'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.signal, child.stderr).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toEqual({ binding: bindingName, evicted: 'ok' });
    expect(child.stderr).not.toMatch(/warning/i); // node:sqlite's "experimental" warning is not printed
  });

  it('reads rows as arrays or objects, blobs as Buffers, and tells readers and read-only statements apart', () => {
    const db = openSqlite(join(tempDir(), 'a.db'));
    db.exec('create table t (id integer primary key, name text unique, data bytea)');
    const insert = db.prepare('insert into t (name, data) values (?, ?)');
    expect(insert.reader).toBe(false);
    expect(insert.readonly).toBe(false);
    expect(insert.run('a', Buffer.from('bytes')).changes).toBe(1);
    expect(insert.run(['b', null]).lastInsertRowid).toBe(2); // one array: its items are the parameters

    const select = db.prepare('select id, name, data from t where id = ?');
    expect(select.reader).toBe(true);
    expect(select.readonly).toBe(true);
    expect(select.columns().map((c) => c.name)).toEqual(['id', 'name', 'data']);
    const row = select.get(1) as { data: Buffer };
    expect(row).toEqual({ id: 1, name: 'a', data: Buffer.from('bytes') });
    expect(Buffer.isBuffer(row.data)).toBe(true);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(select.raw(true).get([2])).toEqual([2, 'b', null]);
    expect(select.get(3)).toBeUndefined();

    const returning = db.prepare('update t set name = ? where id = ? returning id');
    expect(returning.reader).toBe(true);
    expect(returning.readonly).toBe(false);
    expect(returning.all('c', 2)).toEqual([{ id: 2 }]);
    expect([...db.prepare('select name from t order by id').iterate()]).toEqual([{ name: 'a' }, { name: 'c' }]);
    expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
    db.close();
    expect(db.open).toBe(false);
  });

  it('names constraint and busy errors as the store expects', () => {
    const file = join(tempDir(), 'b.db');
    const db = openSqlite(file);
    db.exec('create table t (name text unique)');
    db.prepare('insert into t values (?)').run('x');
    let failure: unknown;
    try {
      db.prepare('insert into t values (?)').run('x');
    } catch (error) {
      failure = error;
    }
    expect(isUniqueViolation(failure)).toBe(true);

    db.exec('BEGIN EXCLUSIVE');
    expect(db.inTransaction).toBe(true);
    const other = openSqlite(file, { timeout: 0 });
    expect(() => other.exec('BEGIN EXCLUSIVE')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
    other.close();
    db.exec('COMMIT');
    db.close();
    expect(() => openSqlite(join(tempDir(), 'missing.db'), { fileMustExist: true })).toThrow();
  });

  it('copies a database in one online backup', async () => {
    const dir = tempDir();
    const db = openSqlite(join(dir, 'source.db'));
    db.exec('create table t (n integer)');
    const insert = db.prepare('insert into t values (?)');
    for (let i = 0; i < 2000; i++) insert.run(i);
    await onlineBackup(db, join(dir, 'copy.db'));
    db.close();
    const copy = openSqlite(join(dir, 'copy.db'), { readonly: true, fileMustExist: true });
    expect(copy.prepare('select count(*) as n from t').get()).toEqual({ n: 2000 });
    copy.close();
  });
});

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as NodeSqlite from 'node:sqlite';

/**
 * The SQLite binding this Node runs (docs/decisions/sqlite-binding.md): Node's own `node:sqlite`
 * where it has what the store needs (Node 22.16 and later, 24), else better-sqlite3 12, which is
 * built at install only for such a Node (scripts/install-sqlite.ts). better-sqlite3 12 aborts the
 * process on Node 24.19 and later (nodejs/node#65446) and 13 needs Node 22, so no one addon serves
 * Node 20 to 24; Node's own binding cannot break that way when Node changes.
 *
 * Both are seen through the subset of better-sqlite3's API the store uses, so better-sqlite3's own
 * objects serve as they are and only node:sqlite is wrapped.
 */
export interface SqliteStatement {
  /** Returns rows (a SELECT, or a write with RETURNING). */
  readonly reader: boolean;
  /** Writes nothing: may run inside a shared read transaction. */
  readonly readonly: boolean;
  columns(): { name: string }[];
  /** Rows as arrays of values in column order, from now on. */
  raw(toggle: true): this;
  // Parameters: positional, either spread or as one array (better-sqlite3's two forms; Kysely passes an array).
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): RunResult;
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

/** Integers are numbers: neither binding is asked for BigInts. */
export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  /** Defines an SQL function of one argument on this connection (both bindings' `function`). */
  function(name: string, options: { deterministic: boolean }, fn: (value: unknown) => unknown): unknown;
  /** `PRAGMA <source>`: its rows, or with `simple` the first row's first value. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  readonly inTransaction: boolean;
  readonly open: boolean;
  close(): unknown;
}

export interface OpenOptions {
  readonly?: boolean;
  /** Fail instead of creating the file. */
  fileMustExist?: boolean;
  /** Busy timeout in milliseconds (default 5000, as better-sqlite3's). */
  timeout?: number;
}

export type BindingName = 'node:sqlite' | 'better-sqlite3';

const require = createRequire(import.meta.url);

/** What the store needs of node:sqlite: rows as arrays, column names, transaction state, online backup. */
export function nodeSqliteUsable(sqlite: typeof NodeSqlite | undefined): sqlite is typeof NodeSqlite {
  if (sqlite === undefined || typeof sqlite.backup !== 'function') return false;
  const probe = new sqlite.DatabaseSync(':memory:');
  try {
    const statement = probe.prepare('select 1');
    return typeof statement.setReturnArrays === 'function' && typeof statement.columns === 'function' && typeof probe.isTransaction === 'boolean';
  } finally {
    probe.close();
  }
}

/**
 * node:sqlite, loaded without its "experimental" warning (the store's tests pin its behaviour on
 * every supported Node), or undefined where Node has none.
 */
function loadNodeSqlite(): typeof NodeSqlite | undefined {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(warning).startsWith('SQLite is an experimental feature')) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return require('node:sqlite') as typeof NodeSqlite;
  } catch {
    return undefined;
  } finally {
    process.emitWarning = emit;
  }
}

function choose(): { name: BindingName; nodeSqlite?: typeof NodeSqlite } {
  const wanted = process.env.SQLITE_BINDING;
  if (wanted !== undefined && wanted !== 'node:sqlite' && wanted !== 'better-sqlite3') {
    throw new Error(`SQLITE_BINDING must be node:sqlite or better-sqlite3, not ${wanted}`);
  }
  const sqlite = wanted === 'better-sqlite3' ? undefined : loadNodeSqlite();
  if (nodeSqliteUsable(sqlite)) return { name: 'node:sqlite', nodeSqlite: sqlite };
  if (wanted === 'node:sqlite') throw new Error(`SQLITE_BINDING=node:sqlite: Node ${process.version} has no usable node:sqlite (22.16 or later has)`);
  return { name: 'better-sqlite3' };
}

const chosen = choose();
/** The binding in use; SQLITE_BINDING chooses one (tests and benchmarks compare them). */
export const bindingName: BindingName = chosen.name;

/** better-sqlite3's module path (the checkpointer's worker requires it by that path). */
export function betterSqlitePath(): string {
  return require.resolve('better-sqlite3');
}

function loadBetterSqlite(): new (file: string, options?: object) => SqliteConnection & { backup(file: string, options: object): Promise<unknown> } {
  try {
    return require('better-sqlite3');
  } catch (error) {
    throw new Error(
      `Node ${process.version} needs better-sqlite3 built for it (Node 22.16 or later needs nothing): run \`npm install\` ` +
        `again with this Node (it builds it), or use Node 22 or 24. ${(error as Error).message}`,
    );
  }
}

export function openSqlite(file: string, options: OpenOptions = {}): SqliteConnection {
  if (chosen.nodeSqlite) return NodeSqliteConnection.open(chosen.nodeSqlite, file, options);
  const Database = loadBetterSqlite();
  return new Database(file, { readonly: options.readonly ?? false, fileMustExist: options.fileMustExist ?? false, timeout: options.timeout ?? 5000 });
}

const ALL_PAGES = 0x7fffffff;

/** SQLite's online backup of the whole database into `target`, in one step (one consistent snapshot). */
export async function onlineBackup(conn: SqliteConnection, target: string): Promise<void> {
  // Neither takes SQLite's -1 (all pages): a step of every page there could be. One step is one
  // snapshot; steps in between a writer's commits would start the copy over.
  if (conn instanceof NodeSqliteConnection) {
    await chosen.nodeSqlite!.backup(conn.db, target, { rate: ALL_PAGES });
    return;
  }
  await (conn as unknown as { backup(file: string, options: object): Promise<unknown> }).backup(target, { progress: () => ALL_PAGES });
}

/**
 * node:sqlite's error carries the extended result code as a number (`errcode`); the store's code
 * reads better-sqlite3's names (`code: 'SQLITE_BUSY'`): the primary codes, and the extended ones the store tells apart.
 */
const RESULT_CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  26: 'SQLITE_NOTADB',
  19: 'SQLITE_CONSTRAINT',
  275: 'SQLITE_CONSTRAINT_CHECK',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
};

function named(error: unknown): unknown {
  const e = error as { code?: unknown; errcode?: unknown } | null;
  if (e && typeof e.errcode === 'number') e.code = RESULT_CODES[e.errcode] ?? `SQLITE_ERROR_${e.errcode}`;
  return error;
}

/** Parameters given as one array are its items (better-sqlite3's rule: SQLite binds no arrays). */
const positional = (params: unknown[]): unknown[] => (params.length === 1 && Array.isArray(params[0]) ? (params[0] as unknown[]) : params);

/** node:sqlite returns blobs as Uint8Array; the store's code expects Buffers, as better-sqlite3 gives. */
function buffersIn(row: unknown[], at: readonly number[]): unknown[] {
  for (const i of at) {
    const v = row[i];
    if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[i] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  return row;
}

/** A row object of one shape per statement, built from the array (as the store's own builder does). */
function objectBuilder(names: string[]): (values: unknown[]) => unknown {
  const fields = names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`);
  return new Function('v', `return { ${fields.join(', ')} };`) as (values: unknown[]) => unknown;
}

class NodeSqliteStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly readonly: boolean;
  private readonly names: string[];
  /** Columns that may hold a blob: declared BLOB or BYTEA, or an expression (no declared type). */
  private readonly blobColumns: number[];
  private toObject: ((values: unknown[]) => unknown) | null;

  constructor(
    private readonly stmt: NodeSqlite.StatementSync,
    sql: string,
  ) {
    const columns = stmt.columns();
    this.names = columns.map((c) => c.name);
    this.reader = columns.length > 0;
    // SQLite's sqlite3_stmt_readonly is not exposed: a SELECT is the one kind that never writes.
    this.readonly = /^\s*select\b/i.test(sql);
    this.blobColumns = columns.flatMap((c, i) => (c.type === null || /blob|bytea/i.test(c.type) ? [i] : []));
    stmt.setReturnArrays(true);
    this.toObject = this.reader ? objectBuilder(this.names) : null;
  }

  columns(): { name: string }[] {
    return this.names.map((name) => ({ name }));
  }

  raw(): this {
    this.toObject = null;
    return this;
  }

  private row(values: unknown[]): unknown {
    if (this.blobColumns.length > 0) buffersIn(values, this.blobColumns);
    return this.toObject ? this.toObject(values) : values;
  }

  get(...params: unknown[]): unknown {
    try {
      const values = this.stmt.get(...(positional(params) as NodeSqlite.SQLInputValue[])) as unknown[] | undefined;
      return values === undefined ? undefined : this.row(values);
    } catch (error) {
      throw named(error);
    }
  }

  all(...params: unknown[]): unknown[] {
    try {
      const rows = this.stmt.all(...(positional(params) as NodeSqlite.SQLInputValue[])) as unknown as unknown[][];
      return rows.map((values) => this.row(values));
    } catch (error) {
      throw named(error);
    }
  }

  run(...params: unknown[]): RunResult {
    try {
      return this.stmt.run(...(positional(params) as NodeSqlite.SQLInputValue[])) as RunResult;
    } catch (error) {
      throw named(error);
    }
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    try {
      for (const values of this.stmt.iterate(...(positional(params) as NodeSqlite.SQLInputValue[]))) yield this.row(values as unknown as unknown[]);
    } catch (error) {
      throw named(error);
    }
  }
}

class NodeSqliteConnection implements SqliteConnection {
  private constructor(readonly db: NodeSqlite.DatabaseSync) {}

  static open(sqlite: typeof NodeSqlite, file: string, options: OpenOptions): NodeSqliteConnection {
    if (options.fileMustExist && !existsSync(file)) {
      throw Object.assign(new Error(`unable to open database file: ${file} does not exist`), { code: 'SQLITE_CANTOPEN' });
    }
    try {
      return new NodeSqliteConnection(new sqlite.DatabaseSync(file, { readOnly: options.readonly ?? false, timeout: options.timeout ?? 5000 }));
    } catch (error) {
      throw named(error);
    }
  }

  prepare(sql: string): SqliteStatement {
    try {
      return new NodeSqliteStatement(this.db.prepare(sql), sql);
    } catch (error) {
      throw named(error);
    }
  }

  exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (error) {
      throw named(error);
    }
  }

  function(name: string, options: { deterministic: boolean }, fn: (value: unknown) => unknown): void {
    this.db.function(name, options, fn as (...args: NodeSqlite.SQLInputValue[]) => NodeSqlite.SQLOutputValue);
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const stmt = this.prepare(`PRAGMA ${source}`);
    if (!stmt.reader) return options.simple ? undefined : (stmt.run(), []);
    if (!options.simple) return stmt.all();
    const first = stmt.raw(true).get() as unknown[] | undefined;
    return first?.[0];
  }

  get inTransaction(): boolean {
    return this.db.isTransaction;
  }

  get open(): boolean {
    return this.db.isOpen;
  }

  close(): void {
    this.db.close();
  }
}

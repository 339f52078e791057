import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.ts';
import type { Store } from './store.ts';

/** Rows indexed per unit: one FTS5 segment, about 10 ms of the writer (~5 µs a row, measured). */
const BATCH_ROWS = 2000;
/** Index pages merged per batch: a bounded share of the writer's time (FTS5's 'merge' command). */
const MERGE_PAGES = 200;
/** How often an idle store looks for rows to index. */
const EVERY_MS = 1000;

/**
 * Keeps migration 029's FTS5 index of `license_search` up to date, in batches, on SQLite. FTS5 writes
 * an index segment at every commit and savepoint: indexed by the triggers, each activation cost about
 * 75 µs more CPU (docs/decisions/license-search.md). Here one unit takes every tombstone (rows deleted
 * after they were indexed) out of the index and adds up to BATCH_ROWS new rows, then moves the
 * watermark; the search reads the rows past the watermark directly, so it never waits for this.
 */
export class SearchIndexer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly store: Store) {}

  start(): void {
    this.schedule(EVERY_MS);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce().then(
        (full) => this.schedule(full ? 0 : EVERY_MS),
        () => this.schedule(EVERY_MS), // The store failing (closing, disk): the next turn tries again.
      );
    }, ms);
    this.timer.unref();
  }

  /** Indexes one batch if there is work; true when the batch was full (more may be waiting). */
  async runOnce(): Promise<boolean> {
    const db = this.store.db;
    const pending = await this.store.read.first<{ behind: number; dead: number }>(pendingWork(db));
    if (!pending || (pending.behind === 0 && pending.dead === 0)) return false;
    return this.store.write(async (tx) => {
      await tx.run(sql`INSERT INTO license_search_fts (license_search_fts, rowid, body) SELECT 'delete', id, body FROM license_search_tombstones`.compile(db));
      await tx.run(sql`DELETE FROM license_search_tombstones`.compile(db));
      const batch = await tx.first<{ last: number | null; n: number }>(
        sql`SELECT max(id) AS last, count(*) AS n FROM (SELECT id FROM license_search
          WHERE id > (SELECT indexed_through FROM license_search_state WHERE k = 0) ORDER BY id LIMIT ${BATCH_ROWS})`.compile(db),
      );
      if (!batch || batch.last === null) return false;
      await tx.run(
        sql`INSERT INTO license_search_fts (rowid, body) SELECT id, body FROM license_search
          WHERE id > (SELECT indexed_through FROM license_search_state WHERE k = 0) AND id <= ${batch.last}`.compile(db),
      );
      await tx.run(sql`UPDATE license_search_state SET indexed_through = ${batch.last} WHERE k = 0`.compile(db));
      // Merge work in bounded steps (automerge is off, migration 029): the index's segments stay few.
      await tx.run(sql`INSERT INTO license_search_fts (license_search_fts, rank) VALUES ('merge', ${MERGE_PAGES})`.compile(db));
      return batch.n === BATCH_ROWS;
    });
  }

  /** Indexes until nothing is left (after a bulk load, before measuring searches or the hot paths). */
  async catchUp(): Promise<void> {
    while (await this.runOnce());
  }

  /** Stops the timer and waits for a batch in flight (before the store closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}

function pendingWork(db: Kysely<Database>) {
  return sql`SELECT
    (SELECT count(*) FROM (SELECT 1 FROM license_search WHERE id > (SELECT indexed_through FROM license_search_state WHERE k = 0) LIMIT 1)) AS behind,
    (SELECT count(*) FROM (SELECT 1 FROM license_search_tombstones LIMIT 1)) AS dead`.compile(db);
}

import { type SelectQueryBuilder, sql } from 'kysely';
import type { Store } from '../../storage/index.ts';
import { type Database, flag, type LicenseRow } from '../../storage/schema.ts';
import { containsPattern, SQLITE_LOWER } from '../../storage/like.ts';
import { toRecord } from './license-row.ts';
import type { LicenseFilter, LicenseSummary, SearchPosition } from './types.ts';

/**
 * The order a filter pages in, each served by an index of migration 006 so a page reads about
 * `limit` index entries whatever the account's size: a key prefix in key order (account_id, key);
 * expired licenses by expiry, newest first (account_id, revoked, expires_at, key); everything else
 * by creation, newest first unless asked oldest first (account_id, created_at, key), or
 * (account_id, revoked, created_at, key) for a status, or (account_id, email_normalized, created_at,
 * key) for an address. Read backwards for a previous page.
 */
export function searchOrder(filter: LicenseFilter): 'key' | 'expires_at' | 'created_at' {
  if (filter.status === 'expired') return 'expires_at';
  return filter.keyPrefix !== undefined || filter.sort === 'key' ? 'key' : 'created_at';
}

/** Whether the order runs down (newest first). */
const descending = (filter: LicenseFilter): boolean => {
  const order = searchOrder(filter);
  return order === 'expires_at' || (order === 'created_at' && filter.sort !== 'oldest');
};

/** A page's bounds: its size, and the cursor it starts after (next) or before (previous). */
type PageOptions = { limit: number; after?: SearchPosition; before?: SearchPosition };

/**
 * How a page's piece of text is matched: `walk`: tested row by row along the order's index from the
 * cursor, up to `bound` (the last row of the window, included) when given; `ids`: the search side
 * rows SQLite's FTS5 index found (`fewMatchIds`); neither: through the trigram index.
 */
type TextPath = { walk?: { bound?: SearchPosition }; ids?: readonly number[] };

/** Rows a search by a piece of text walks in order before turning to the trigram index: see `search` (measured in docs/decisions/license-search.md). */
const WALK_ROWS = 1000;

/** The page a window of `walkRows` is for: the dashboard's 50 rows and the one past them. */
const WALK_PAGE = 51;

/**
 * How many first windows' worth of rows a second walk may read when the first window held some
 * matches, too few for the page (`walkPage`): a piece in about one license in 125 or more fills the
 * dashboard's page in the walk.
 */
const WALK_GROWTH = 8;

/**
 * How many times the capped count's rows a dense piece's count may test (`countByWalk`): it walks
 * when one row in COUNT_WINDOW or more matches.
 */
const COUNT_WINDOW = 8;

/** Which way a page reads its order's index: a previous page reads it backwards from its cursor (the caller turns it round). */
function pageDirection(f: LicenseFilter, o: Pick<PageOptions, 'after' | 'before'>): { direction: 'asc' | 'desc'; past: '<' | '>' } {
  const down = descending(f) !== (o.before !== undefined);
  return { direction: down ? 'desc' : 'asc', past: down ? '<' : '>' };
}

/**
 * Rows past `position` in the order's index. A row-value comparison: both stores use it as the index
 * range's bound (an OR of the two columns is only a filter, which makes page n read every row before it).
 */
function fromCursor<Q extends SelectQueryBuilder<Database, 'licenses', any>>(q: Q, order: ReturnType<typeof searchOrder>, op: '<' | '>' | '<=' | '>=', position: SearchPosition | undefined): Q {
  if (position === undefined) return q;
  if (order === 'key') return q.where('key', op, position.key) as Q;
  return q.where((eb) => eb(eb.refTuple(order, 'key'), op, eb.tuple(position.sort!, position.key))) as Q;
}

/** `piece` as an FTS5 phrase: with the trigram tokenizer, any text containing it (no wildcards). */
const ftsPhrase = (piece: string): string => `"${piece.replace(/"/g, '""')}"`;

/** Rows in the order's index order (read backwards with `desc` where the order runs up). */
function inOrder<Q extends SelectQueryBuilder<Database, 'licenses', any>>(q: Q, order: ReturnType<typeof searchOrder>, direction: 'asc' | 'desc'): Q {
  return (order === 'key' ? q.orderBy('key', direction) : q.orderBy(order, direction).orderBy('key', direction)) as Q;
}

/**
 * The dashboard's license search: pages both ways in an index's order, a piece of text through the
 * trigram indexes or row by row, and a capped count (docs/decisions/license-search.md).
 */
export class LicenseSearch {
  /** SQLite's FTS5 reads of a piece's few matches in flight, shared by concurrent callers (`fewMatchIds`). */
  private readonly idReads = new Map<string, Promise<readonly number[] | undefined>>();

  /** `walkRows`: rows of the order's index a search by a piece of text walks before turning to the trigram index (`search`). */
  constructor(
    private readonly store: Store,
    private readonly walkRows = WALK_ROWS,
  ) {}

  private get db() {
    return this.store.db;
  }

  /**
   * The licenses the filter matches, unordered and unbounded (the page and the count add theirs). A
   * piece of text is matched through its trigram index (`byIndex`: the matches drive) or row by row
   * (`walk`: along the order's index, see `search`).
   */
  private matching(accountId: string, f: LicenseFilter, now: number, from: { expiredFromNow: boolean; text?: 'byIndex' | 'walk'; ids?: readonly number[] }) {
    const text = f.contains === undefined ? undefined : (from.text ?? 'byIndex');
    // With the matches driving, SQLite would otherwise walk the account's whole created_at index (to
    // skip the sort) probing each row against them; the unary + keeps it off that index, so it reads
    // the matches by primary key and sorts only those.
    const drivenByText = text === 'byIndex' && this.store.dialect === 'sqlite';
    return this.db
      .selectFrom(text === 'byIndex' && this.store.dialect === 'postgres' ? this.pgContaining(f.contains!).as('licenses') : 'licenses')
      .$if(!drivenByText, (q) => q.where('account_id', '=', accountId))
      .$if(drivenByText, (q) => q.where(sql<string>`+account_id`, '=', accountId))
      .$if(f.productId !== undefined, (q) => q.where('product_id', '=', f.productId!))
      .$if(f.email !== undefined, (q) => q.where('email_normalized', '=', f.email!))
      // The prefix as a key range: an index range scan on both stores (keys are ASCII; the column compares bytewise).
      .$if(f.keyPrefix !== undefined, (q) => q.where('key', '>=', f.keyPrefix!).where('key', '<', `${f.keyPrefix!}\u007f`))
      .$if(text === 'byIndex' && this.store.dialect === 'sqlite', (q) => q.where('key', 'in', this.sqliteContaining(f.contains!, from.ids)))
      .$if(text === 'walk', (q) => q.where(this.rowContains(f.contains!)))
      .$if(f.status === 'revoked', (q) => q.where('revoked', '=', flag(true)))
      .$if(f.status === 'active', (q) =>
        q.where('revoked', '=', flag(false)).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])),
      )
      .$if(f.status === 'expired', (q) => q.where('revoked', '=', flag(false)))
      .$if(f.status === 'expired' && from.expiredFromNow, (q) => q.where('expires_at', '<=', now));
  }

  /**
   * SQLite: the keys of licenses whose address or key, or one of whose devices' identifier or name,
   * contains `piece` (lower-case), through migration 029's FTS5 trigram table or the side rows it has
   * already found (`ids`). Any account's: the caller's `account_id` condition keeps the tenant's own.
   */
  private sqliteContaining(piece: string, ids?: readonly number[]) {
    // A quoted phrase: with the trigram tokenizer, any row containing the text (no wildcards; a LIKE
    // would need an ESCAPE clause for % and _, and FTS5 then leaves its index unused). Found ids
    // travel as one JSON parameter: one statement text whatever their number.
    const indexed = ids ? sql`SELECT value FROM json_each(${JSON.stringify(ids)})` : sql`SELECT rowid FROM license_search_fts WHERE license_search_fts MATCH ${ftsPhrase(piece)}`;
    // The index holds the rows up to the watermark (the indexer adds the rest in batches); the few
    // rows past it are read directly. A deleted row's entry may linger in the index until the
    // indexer takes it out: the join on license_search drops it (ids are never reused).
    return sql<string>`(SELECT license_key FROM license_search WHERE id IN (${indexed})
      UNION ALL SELECT license_key FROM license_search WHERE id > (SELECT indexed_through FROM license_search_state WHERE k = 0) AND instr(${sql.raw(SQLITE_LOWER)}(body), ${piece}) > 0)`;
  }

  /**
   * PostgreSQL: the license rows whose address or key, or one of whose devices' identifier or name,
   * contains `piece` (lower-case), through its pg_trgm GIN indexes; the caller's conditions (the
   * account's first) are pushed into both branches. Rows, not keys to join back: with tens of
   * thousands of matches, a join on their keys made PostgreSQL read the whole table (a hash join
   * over a scan of 1,000,000 rows: 360 ms for a count of "ustomer12" at 2 % of them). The branches
   * are disjoint (the second only where the first does not match), so no row comes twice.
   */
  private pgContaining(piece: string) {
    const pattern = containsPattern(piece);
    // The first branch's condition as its trigram indexes serve it; the second's negation of it
    // counts a missing address as not matching (NOT of a NULL would drop the row).
    return sql<LicenseRow>`(SELECT * FROM licenses WHERE email_normalized LIKE ${pattern} ESCAPE '\\' OR key ILIKE ${pattern} ESCAPE '\\'
      UNION ALL SELECT * FROM licenses WHERE key IN (SELECT license_key FROM devices WHERE lower(identifier) LIKE ${pattern} ESCAPE '\\' OR lower(name) LIKE ${pattern} ESCAPE '\\')
        AND NOT (coalesce(email_normalized LIKE ${pattern} ESCAPE '\\', false) OR key ILIKE ${pattern} ESCAPE '\\'))`;
  }

  /**
   * Whether this license row's address or key, or one of its devices' identifier or name, contains
   * `piece` (lower-case): the same rule as `containing`, tested on one row (a dense search's walk).
   */
  private rowContains(piece: string) {
    if (this.store.dialect === 'sqlite') {
      // instr, not LIKE: no wildcard characters to escape. Device identifiers and names fold all of
      // Unicode's case as FTS5 does (SQLITE_LOWER; the address is stored lower-cased, keys are ASCII).
      const lower = sql.raw(SQLITE_LOWER);
      return sql<boolean>`(instr(coalesce(licenses.email_normalized, ''), ${piece}) > 0 OR instr(lower(licenses.key), ${piece}) > 0
        OR EXISTS (SELECT 1 FROM devices d WHERE d.license_key = licenses.key AND (instr(${lower}(d.identifier), ${piece}) > 0 OR instr(${lower}(d.name), ${piece}) > 0)))`;
    }
    const pattern = containsPattern(piece);
    return sql<boolean>`(licenses.email_normalized LIKE ${pattern} ESCAPE '\\' OR licenses.key ILIKE ${pattern} ESCAPE '\\'
      OR EXISTS (SELECT 1 FROM devices d WHERE d.license_key = licenses.key AND (lower(d.identifier) LIKE ${pattern} ESCAPE '\\' OR lower(d.name) LIKE ${pattern} ESCAPE '\\')))`;
  }

  /** The statement of one search page (the benchmark and the plan test read it too), its text matched as `TextPath` says. */
  searchQuery(accountId: string, f: LicenseFilter, now: number, o: PageOptions & TextPath) {
    const order = searchOrder(f);
    const { direction, past } = pageDirection(f, o);
    const byIndex = f.contains !== undefined && o.walk === undefined;
    const bound = o.walk?.bound;
    return (
      this.matching(accountId, f, now, { expiredFromNow: o.after === undefined, text: byIndex ? 'byIndex' : 'walk', ids: o.ids })
        .selectAll()
        // Each row's device count in the same statement: one probe of the devices' primary key per row.
        .select((eb) => eb.selectFrom('devices').select(eb.fn.countAll<number>().as('n')).whereRef('devices.license_key', '=', 'licenses.key').as('device_count'))
        .$call((q) => fromCursor(q, order, past, o.before ?? o.after))
        .$if(bound !== undefined, (q) => fromCursor(q, order, past === '<' ? '>=' : '<=', bound))
        // With the matches driving, ordering by an expression keeps PostgreSQL off the account's
        // ordered index too (it would walk it probing each row against the matches): only the
        // matches are sorted.
        .$if(byIndex, (q) =>
          order === 'key' ? q.orderBy(sql`key || ''`, direction) : q.orderBy(sql`${sql.ref(order)} + 0`, direction).orderBy(sql`key || ''`, direction),
        )
        .$if(!byIndex, (q) => inOrder(q, order, direction))
        .limit(o.limit)
    );
  }

  /**
   * The last row of the window a dense search walks: the `rows`-th row of the order's index from
   * the cursor, the text aside (an index-only read of that many entries), or undefined when fewer
   * rows are left.
   */
  private async walkBound(accountId: string, f: LicenseFilter, now: number, o: Pick<PageOptions, 'after' | 'before'>, rows: number): Promise<SearchPosition | undefined> {
    const order = searchOrder(f);
    const { direction, past } = pageDirection(f, o);
    const row = await this.store.read.first(
      this.matching(accountId, { ...f, contains: undefined }, now, { expiredFromNow: o.after === undefined })
        .select(order === 'key' ? [sql<null>`NULL`.as('sort'), 'key'] : [sql.ref<number | null>(order).as('sort'), 'key'])
        .$call((q) => fromCursor(q, order, past, o.before ?? o.after))
        .$call((q) => inOrder(q, order, direction))
        .limit(1)
        .offset(rows - 1),
    );
    return row && { sort: row.sort, key: row.key };
  }

  /**
   * A page of the filter's licenses. A piece of text that many licenses contain (the shop's domain)
   * would read and sort every match through the trigram index; so unless SQLite's FTS5 index has
   * already found that there are few (`fewMatchIds`), the page is first walked along the order's
   * index (`walkPage`): a dense piece fills the page within a few rows. Only when the walk cannot
   * decide the page does the index serve it.
   */
  async search(accountId: string, f: LicenseFilter, now: number, o: PageOptions): Promise<LicenseSummary[]> {
    let rows: Awaited<ReturnType<typeof this.readPage>> | undefined;
    if (f.contains !== undefined) {
      const ids = await this.fewMatchIds(f.contains);
      rows = ids ? await this.readPage(accountId, f, now, { ...o, ids }) : await this.walkPage(accountId, f, now, o);
    }
    rows ??= await this.readPage(accountId, f, now, o);
    if (o.before !== undefined) rows.reverse();
    return rows.map((r) => ({ ...toRecord(r), activeDeviceCount: Number(r.device_count ?? 0) }));
  }

  private readPage(accountId: string, f: LicenseFilter, now: number, o: PageOptions & TextPath) {
    return this.store.read.all(this.searchQuery(accountId, f, now, o));
  }

  /**
   * A page of a piece of text walked along the order's index, or undefined when the walk cannot
   * decide it. A first window of `walkRows` rows per WALK_PAGE rows of the page (so an export's batch
   * of 1,000 walks 20 windows' worth); when it holds some matches, too few for the page, their density
   * says how many more rows the rest of the page needs, and a second window of half as many again
   * (at most WALK_GROWTH first windows' worth) goes on from where the first stopped. A full page, or
   * the whole rest of the list walked, decides the page.
   */
  private async walkPage(accountId: string, f: LicenseFilter, now: number, o: PageOptions) {
    const first = this.walkRows * Math.ceil(o.limit / WALK_PAGE);
    const back = o.before !== undefined;
    let from = o.before ?? o.after;
    let rows = first;
    const walked: Awaited<ReturnType<typeof this.readPage>> = [];
    for (let pass = 1; ; pass++) {
      const bounds = back ? { before: from } : { after: from };
      const bound = await this.walkBound(accountId, f, now, bounds, rows);
      walked.push(...(await this.readPage(accountId, f, now, { ...bounds, limit: o.limit - walked.length, walk: { bound } })));
      if (walked.length === o.limit || bound === undefined) return walked;
      if (walked.length === 0 || pass === 2) return undefined;
      rows = Math.ceil((((o.limit - walked.length) * first) / walked.length) * 1.5);
      if (rows > WALK_GROWTH * first) return undefined;
      from = bound;
    }
  }

  async countMatches(accountId: string, f: LicenseFilter, now: number, cap: number): Promise<number> {
    if (f.contains !== undefined) {
      const ids = await this.fewMatchIds(f.contains);
      if (ids) return this.countIn(accountId, f, now, cap, ids);
      const walked = await this.countByWalk(accountId, f, now, cap);
      if (walked !== undefined) return walked;
    }
    return this.countIn(accountId, f, now, cap);
  }

  /** The filter's matches through the trigram index (or the side rows it found), at most `cap` + 1. */
  private async countIn(accountId: string, f: LicenseFilter, now: number, cap: number, ids?: readonly number[]): Promise<number> {
    const capped = this.matching(accountId, f, now, { expiredFromNow: true, ids }).select(sql<number>`1`.as('one')).limit(cap + 1);
    const row = await this.store.read.first(this.db.selectFrom(capped.as('m')).select((eb) => eb.fn.countAll<number>().as('n')));
    return Number(row?.n ?? 0);
  }

  /**
   * A dense piece's capped count, read row by row (`walkWindow`): through the trigram index, a piece
   * in every license reads every match (1-3 s at 1,000,000). First `walkRows` rows, each tested:
   * they are all of the
   * filter's rows (the exact count), or fewer than one in COUNT_WINDOW matches (undefined: the index
   * counts). Then up to COUNT_WINDOW × (cap + 1) rows, stopping at the `cap` + 1st match: more than
   * `cap`, or undefined.
   */
  private async countByWalk(accountId: string, f: LicenseFilter, now: number, cap: number): Promise<number | undefined> {
    const sample = await this.store.read.first(
      this.db
        .selectFrom(this.walkWindow(accountId, f, now, this.walkRows).as('licenses'))
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<number>(sql`CASE WHEN ${this.rowContains(f.contains!)} THEN 1 ELSE 0 END`).as('matched')]),
    );
    const [rows, matched] = [Number(sample?.n ?? 0), Number(sample?.matched ?? 0)];
    if (rows < this.walkRows) return Math.min(matched, cap + 1);
    if (matched * COUNT_WINDOW < this.walkRows) return undefined;
    const capped = this.db
      .selectFrom(this.walkWindow(accountId, f, now, COUNT_WINDOW * (cap + 1)).as('licenses'))
      .select(sql<number>`1`.as('one'))
      .where(this.rowContains(f.contains!))
      .limit(cap + 1);
    const n = Number((await this.store.read.first(this.db.selectFrom(capped.as('m')).select((eb) => eb.fn.countAll<number>().as('n'))))?.n ?? 0);
    return n > cap ? n : undefined;
  }

  /**
   * The search side rows whose text contains `piece` in the trigram index, all accounts', when there
   * are fewer than `walkRows`; undefined when there are more, or on PostgreSQL, whose GIN scan builds
   * its whole bitmap first (SQLite's FTS5 reads a phrase's matches lazily: ~1 ms for a rare piece, 6 ms
   * to find 1,000 of "@example" at 1,000,000). The page and the count are then served from these ids:
   * a piece of common trigrams (`device-333333`, every identifier starting `device-`) costs one read
   * of its long lists, not three. Concurrent calls for one piece (a page and its count) share the
   * read. Rows past the indexer's watermark are read apart (`containing`).
   */
  private fewMatchIds(piece: string): Promise<readonly number[] | undefined> {
    if (this.store.dialect !== 'sqlite') return Promise.resolve(undefined);
    let read = this.idReads.get(piece);
    if (!read) {
      read = this.store.read
        .all<{ id: number }>(sql`SELECT rowid AS id FROM license_search_fts WHERE license_search_fts MATCH ${ftsPhrase(piece)} LIMIT ${this.walkRows}`.compile(this.db))
        .then((rows) => (rows.length < this.walkRows ? rows.map((r) => r.id) : undefined))
        .finally(() => this.idReads.delete(piece));
      this.idReads.set(piece, read);
    }
    return read;
  }

  /**
   * `rows` rows of the filter, the text aside, each read once, to be tested as `licenses` by a count.
   * In no order (a count needs none): the planner reads them the cheapest way, a status's index or
   * PostgreSQL's heap in sequence (in key order, "@example" among revoked licenses took 110 ms on
   * SQLite against 18, at 1,000,000).
   */
  private walkWindow(accountId: string, f: LicenseFilter, now: number, rows: number) {
    return this.matching(accountId, { ...f, contains: undefined }, now, { expiredFromNow: true }).select(['key', 'email_normalized']).limit(rows);
  }
}

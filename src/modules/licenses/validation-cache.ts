import type { ChangeFeed, ChangeListener } from '../../storage/change-feed.ts';
import type { ValidationRow } from './types.ts';

/** A read of one license's validation row, while it is in flight. */
interface Flight {
  /** Reads of this license in flight. */
  readers: number;
  /** The license changed (or everything was reset) after the reads began: what they return may be old. */
  stale: boolean;
}

export interface CacheCounts {
  hits: number;
  misses: number;
  entries: number;
}

/**
 * Validation rows (a license, its product's fallback setting, one active device) kept in memory on
 * PostgreSQL, so a public validation or token refresh pays no round trip when it asks again
 * (docs/decisions/validation-cache.md). What the database's change feed names is dropped, and
 * nothing is trusted while the feed is down. A row read while its license changed is not kept: it
 * may predate the change. Status is computed from the row at each request (expiry stays exact).
 * Only valid answers' rows are kept (an active device), at most `capacity`, the oldest going first;
 * about 370 bytes each (one map entry per license, ids shared).
 */
export class ValidationCache implements ChangeListener {
  /** A license's one cached row (most licenses: one device asks), or its rows by device identifier. */
  private readonly licenses = new Map<string, ValidationRow | Map<string, ValidationRow>>();
  /** One copy of each account and product id held (the database gives each row its own). */
  private readonly names = new Map<string, string>();
  private readonly flights = new Map<string, Flight>();
  private size = 0;
  readonly counts = { hits: 0, misses: 0 };

  constructor(
    private readonly feed: ChangeFeed,
    private readonly capacity: number,
  ) {
    feed.subscribe(this);
  }

  async read(key: string, identifier: string, load: () => Promise<ValidationRow | undefined>): Promise<ValidationRow | undefined> {
    if (this.feed.live) {
      const held = this.licenses.get(key);
      const hit = held instanceof Map ? held.get(identifier) : held?.device!.identifier === identifier ? held : undefined;
      if (hit) {
        this.counts.hits++;
        return hit;
      }
    }
    this.counts.misses++;
    let flight = this.flights.get(key);
    if (!flight) this.flights.set(key, (flight = { readers: 0, stale: !this.feed.live }));
    flight.readers++;
    try {
      const row = await load();
      if (row?.device && !flight.stale && this.feed.live) this.keep(key, identifier, row);
      return row;
    } finally {
      if (--flight.readers === 0) this.flights.delete(key);
    }
  }

  private keep(key: string, identifier: string, row: ValidationRow): void {
    const name = (id: string): string => {
      const held = this.names.get(id);
      if (held !== undefined) return held;
      this.names.set(id, id);
      return id;
    };
    const kept: ValidationRow = { ...row, license: { ...row.license, accountId: name(row.license.accountId), productId: name(row.license.productId) } };
    const held = this.licenses.get(key);
    if (held === undefined) {
      this.licenses.set(key, kept);
      this.size++;
    } else if (held instanceof Map) {
      if (!held.has(identifier)) this.size++;
      held.set(identifier, kept);
    } else if (held.device!.identifier === identifier) {
      this.licenses.set(key, kept);
    } else {
      this.licenses.set(key, new Map([[held.device!.identifier, held], [identifier, kept]]));
      this.size++;
    }
    // The license cached first goes first (Map keeps insertion order).
    for (const [oldest, rows] of this.licenses) {
      if (this.size <= this.capacity) break;
      this.licenses.delete(oldest);
      this.size -= rows instanceof Map ? rows.size : 1;
    }
  }

  changed(key: string): void {
    const flight = this.flights.get(key);
    if (flight) flight.stale = true;
    const rows = this.licenses.get(key);
    if (!rows) return;
    this.licenses.delete(key);
    this.size -= rows instanceof Map ? rows.size : 1;
  }

  reset(): void {
    for (const flight of this.flights.values()) flight.stale = true;
    this.licenses.clear();
    this.size = 0;
  }

  stats(): CacheCounts {
    return { ...this.counts, entries: this.size };
  }
}

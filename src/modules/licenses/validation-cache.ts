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
 * Only valid answers' rows are kept (an active device), at most `capacity`, the oldest going first.
 */
export class ValidationCache implements ChangeListener {
  private readonly licenses = new Map<string, Map<string, ValidationRow>>();
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
      const hit = this.licenses.get(key)?.get(identifier);
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
    let devices = this.licenses.get(key);
    if (!devices) this.licenses.set(key, (devices = new Map()));
    if (!devices.has(identifier)) this.size++;
    devices.set(identifier, row);
    // The license cached first goes first (Map keeps insertion order).
    for (const [oldest, rows] of this.licenses) {
      if (this.size <= this.capacity) break;
      this.licenses.delete(oldest);
      this.size -= rows.size;
    }
  }

  changed(key: string): void {
    const flight = this.flights.get(key);
    if (flight) flight.stale = true;
    const rows = this.licenses.get(key);
    if (!rows) return;
    this.licenses.delete(key);
    this.size -= rows.size;
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

/** What the cache holds for one SQL text, built by the store on a miss. */
export interface Cacheable {
  /** Set on every hit; cleared by a sweep: an entry not used since the last sweep may go. */
  used: boolean;
}

/** The cache's figures for metrics: statements held, prepared (misses), and evicted since start. */
export interface StatementCacheStats {
  cached: number;
  prepared: number;
  evicted: number;
}

/**
 * Prepared statements by SQL text, at most `limit` of them. When full, a sweep evicts every entry
 * not used since the previous sweep (second chance, as the CLOCK page-replacement policy does) and
 * marks the rest unused; if all were used, the older half goes. So a burst of one-off texts (a
 * query with a varying IN list, an unparameterized value: see the outbox claim fix in
 * docs/benchmarks.md) evicts itself instead of the hot path's statements, which a wholesale clear
 * sent back to be parsed and planned again. A hit costs one property write.
 */
export class StatementCache<T extends Cacheable> {
  private readonly entries = new Map<string, T>();
  private prepared = 0;
  private evicted = 0;

  constructor(private readonly limit: number) {}

  get(sql: string, prepare: (sql: string) => T): T {
    const hit = this.entries.get(sql);
    if (hit) {
      hit.used = true;
      return hit;
    }
    if (this.entries.size >= this.limit) this.sweep();
    const entry = prepare(sql);
    this.prepared++;
    this.entries.set(sql, entry);
    return entry;
  }

  stats(): StatementCacheStats {
    return { cached: this.entries.size, prepared: this.prepared, evicted: this.evicted };
  }

  private sweep(): void {
    const before = this.entries.size;
    for (const [sql, entry] of this.entries) {
      if (entry.used) entry.used = false;
      else this.entries.delete(sql);
    }
    if (this.entries.size === before) {
      // Every entry was used since the last sweep: the oldest half (a Map iterates in insertion order).
      let drop = Math.ceil(before / 2);
      for (const sql of this.entries.keys()) {
        if (drop-- === 0) break;
        this.entries.delete(sql);
      }
    }
    this.evicted += before - this.entries.size;
  }
}

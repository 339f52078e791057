/** Told which licenses changed in the database, by whichever process changed them. */
export interface ChangeListener {
  /** A license's row, one of its devices, or its product's part of a validation changed (a key, as stored). */
  changed(licenseKey: string): void;
  /** Anything may have changed: the feed was (re)connected, or a change it cannot name happened. */
  reset(): void;
}

/**
 * The store's word on what changed, for caches of database rows in a process that shares its
 * database with others (docs/decisions/validation-cache.md). PostgreSQL's is fed by triggers
 * through LISTEN/NOTIFY; SQLite has none (one process writes its file, and its lookups are local).
 */
export interface ChangeFeed {
  /**
   * Notifications are flowing: what a listener cached since its last reset is current, but for the
   * changes being delivered. False while disconnected: nothing cached may be trusted.
   */
  readonly live: boolean;
  subscribe(listener: ChangeListener): void;
  /**
   * Resolves once every change committed before the call has reached the listeners of this process
   * (or at once when not live). The store awaits it after each write unit's commit, so a process
   * never answers from its cache what one of its own answered writes has changed.
   */
  fence(): Promise<void>;
  close(): Promise<void>;
}

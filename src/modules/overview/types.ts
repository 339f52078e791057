/** An account's licenses by status and its active devices, counted over one slice of its licenses. */
export interface LicenseTally {
  licenses: number;
  revoked: number;
  /** Not revoked, past their expiry (fallbacked ones included, as the license list's "Expired" filter). */
  expired: number;
  activeDevices: number;
}

/** Paid purchases of one currency (amounts in the currency's smallest unit, as the provider gives them). */
export interface Revenue {
  currency: string;
  purchases: number;
  amount: number;
}

export interface OverviewRepository {
  /**
   * The tally of the account's licenses with a key after `afterKey`, at most `slice` of them in key
   * order, and the last key counted (null past the end): a whole count is a walk of slices, so no
   * one statement holds the store (SQLite's binding is synchronous) for long.
   */
  tallySlice(accountId: string, afterKey: string, slice: number, now: number): Promise<LicenseTally & { lastKey: string | null }>;
  /** Paid purchases (fulfilled or unmapped) per currency made at `since` or later; refunded and disputed ones apart. */
  revenueSince(accountId: string, since: number): Promise<{ paid: Revenue[]; refundedOrDisputed: number }>;
}

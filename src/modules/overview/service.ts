import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Principal } from '../../core/principal.ts';
import type { ActivityService, DayActivity } from '../activity/service.ts';
import type { AuditEntry, AuditService } from '../audit/service.ts';
import type { LicenseTally, OverviewRepository, Revenue } from './types.ts';

const DAY = 86_400_000;
/** Licenses counted by one statement: about 6 ms on SQLite at a million (docs/benchmarks.md), so the store is never held long. */
export const TALLY_SLICE = 2_500;
/** How long a tally is shown before a view counts again (in the background, the old one shown meanwhile). */
export const TALLY_FRESH_MS = 60_000;
/** A view waits this long for a first tally (every account of up to ~100,000 licenses); past it, the page says it is counting. */
export const TALLY_WAIT_MS = 50;
/** Accounts whose tally is kept in memory; the least recently counted goes first. */
const TALLY_ACCOUNTS = 1000;

export interface Tally extends LicenseTally {
  /** Not revoked and not expired. */
  active: number;
  countedAt: number;
  /** More than one slice was counted (a large account): the tally is kept and shown while the next one runs. */
  kept: boolean;
}

export interface ActivitySums {
  activations: number;
  validations: number;
}

export interface AccountOverview {
  /** Undefined while a large account's first count runs. */
  tally: Tally | undefined;
  activity: { last7Days: ActivitySums; last30Days: ActivitySums; days: DayActivity[] };
  revenue: { paid: Revenue[]; refundedOrDisputed: number };
  latest: AuditEntry[];
}

/**
 * The account at a glance: its licenses by status and active devices, activity over 7 and 30
 * days, purchases and revenue per currency over 30 days, and its latest changes. The whole-account
 * counts are a walk of the licenses in slices (no statement holds the store long, no write anywhere),
 * kept a minute per account: a page never waits more than TALLY_WAIT_MS for them.
 */
export class OverviewService {
  private readonly tallies = new Map<string, { tally?: Tally; counting?: Promise<Tally> }>();

  constructor(
    private readonly repo: OverviewRepository,
    private readonly activity: ActivityService,
    private readonly audit: AuditService,
    private readonly clock: () => number = Date.now,
  ) {}

  async overview(principal: Principal, o: { latest: number }): Promise<AccountOverview> {
    const now = this.clock();
    const [tally, days, revenue, latest] = await Promise.all([
      this.tally(principal.accountId),
      this.activity.lastDays(principal),
      this.repo.revenueSince(principal.accountId, now - 30 * DAY),
      this.audit.listAccount(principal, { limit: o.latest }),
    ]);
    const sum = (n: number) =>
      days.slice(-n).reduce((s, d) => ({ activations: s.activations + d.activations, validations: s.validations + d.validations }), { activations: 0, validations: 0 });
    return { tally, activity: { last7Days: sum(7), last30Days: sum(30), days }, revenue, latest: latest.data };
  }

  /**
   * The account's tally. A small account (one slice) is counted on every view, in a few
   * milliseconds, so its figures are always current. A large
   * one's last count is shown for a minute, then still shown while it is counted again behind it;
   * its first count is waited for TALLY_WAIT_MS at most.
   */
  async tally(accountId: string): Promise<Tally | undefined> {
    const entry = this.tallies.get(accountId) ?? {};
    const kept = entry.tally?.kept === true;
    if (kept && this.clock() - entry.tally!.countedAt < TALLY_FRESH_MS) return entry.tally;
    if (!entry.counting) {
      entry.counting = this.count(accountId).finally(() => {
        entry.counting = undefined;
      });
      entry.counting.catch(() => undefined); // a failed count is retried by the next view
      this.tallies.delete(accountId);
      this.tallies.set(accountId, entry);
      if (this.tallies.size > TALLY_ACCOUNTS) this.tallies.delete(this.tallies.keys().next().value!);
    }
    if (kept) return entry.tally;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), TALLY_WAIT_MS);
    });
    try {
      return await Promise.race([entry.counting, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async count(accountId: string): Promise<Tally> {
    const now = this.clock();
    const sum: LicenseTally = { licenses: 0, revoked: 0, expired: 0, activeDevices: 0 };
    let after = '';
    let slices = 0;
    for (;;) {
      slices++;
      const slice = await this.repo.tallySlice(accountId, after, TALLY_SLICE, now);
      sum.licenses += slice.licenses;
      sum.revoked += slice.revoked;
      sum.expired += slice.expired;
      sum.activeDevices += slice.activeDevices;
      if (slice.lastKey === null) break;
      after = slice.lastKey;
      await yieldToLoop(); // requests waiting meanwhile go first
    }
    const tally = { ...sum, active: sum.licenses - sum.revoked - sum.expired, countedAt: now, kept: slices > 1 };
    const entry = this.tallies.get(accountId);
    if (entry) entry.tally = tally;
    return tally;
  }
}

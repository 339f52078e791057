import type { Principal } from '../../core/principal.ts';
import type { UnitRunner, Unit } from '../../core/unit-of-work.ts';

const DAY = 24 * 60 * 60_000;
export const ACTIVITY_DAYS = 30;
export const FLUSH_INTERVAL_MS = 10_000;

/** Counts of one product on one UTC day (days since the epoch). */
export interface ActivityCount {
  productId: string;
  accountId: string;
  day: number;
  activations: number;
  validations: number;
}

export interface ActivityRepository {
  /** Adds the counts to what is stored (an upsert per product and day). */
  add(unit: Unit, counts: ActivityCount[]): Promise<void>;
  /** Stored counts of the account from `fromDay` on; of one product when given. */
  list(accountId: string, fromDay: number, productId?: string): Promise<ActivityCount[]>;
}

export interface DayActivity {
  /** YYYY-MM-DD (UTC). */
  date: string;
  activations: number;
  validations: number;
}

/** What the API routes count with: an in-memory increment, no I/O. */
export type ActivityCounter = Pick<ActivityService, 'activated' | 'validated'>;

/**
 * Activations and validations per product and day (successful ones, through the public API and the
 * server API alike), counted in memory on the public hot path (a
 * Map lookup and an increment: no write per request) and flushed to the store at least every 10 s
 * and at shutdown. Counts not yet flushed are added when the dashboard reads, so it is never behind.
 */
export class ActivityService {
  private pending = new Map<string, ActivityCount>();

  constructor(
    private readonly repo: ActivityRepository,
    private readonly units: UnitRunner,
    private readonly clock: () => number = Date.now,
  ) {}

  activated(accountId: string, productId: string): void {
    this.entry(accountId, productId).activations++;
  }

  validated(accountId: string, productId: string): void {
    this.entry(accountId, productId).validations++;
  }

  /** Writes what was counted since the last flush in one unit; on failure the counts are kept for the next one. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const counts = [...this.pending.values()];
    this.pending = new Map();
    try {
      await this.units.run((unit) => this.repo.add(unit, counts));
    } catch (error) {
      for (const c of counts) {
        const into = this.entry(c.accountId, c.productId, c.day);
        into.activations += c.activations;
        into.validations += c.validations;
      }
      throw error;
    }
  }

  /** The last 30 days, oldest first, every day present (zeros included); one product's when given. */
  async lastDays(principal: Principal, productId?: string): Promise<DayActivity[]> {
    const today = Math.floor(this.clock() / DAY);
    const from = today - ACTIVITY_DAYS + 1;
    const byDay = new Map<number, { activations: number; validations: number }>();
    const add = (c: ActivityCount) => {
      if (c.accountId !== principal.accountId || c.day < from || (productId !== undefined && c.productId !== productId)) return;
      const d = byDay.get(c.day) ?? { activations: 0, validations: 0 };
      d.activations += Number(c.activations);
      d.validations += Number(c.validations);
      byDay.set(c.day, d);
    };
    for (const c of await this.repo.list(principal.accountId, from, productId)) add(c);
    for (const c of this.pending.values()) add(c);
    return Array.from({ length: ACTIVITY_DAYS }, (_, i) => {
      const day = from + i;
      const d = byDay.get(day) ?? { activations: 0, validations: 0 };
      return { date: new Date(day * DAY).toISOString().slice(0, 10), ...d };
    });
  }

  private entry(accountId: string, productId: string, day = Math.floor(this.clock() / DAY)): ActivityCount {
    // One entry per product: a product belongs to one account, and the day changes once a day.
    const key = productId;
    let entry = this.pending.get(key);
    if (entry === undefined || entry.day !== day) {
      if (entry !== undefined) this.pending.set(`${productId}\u0000${entry.day}`, entry);
      entry = { productId, accountId, day, activations: 0, validations: 0 };
      this.pending.set(key, entry);
    }
    return entry;
  }
}

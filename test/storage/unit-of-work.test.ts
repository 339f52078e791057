import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isLicenseEvent } from '../../src/core/events.ts';
import { EventBus } from '../../src/core/unit-of-work.ts';
import type { Store } from '../../src/storage/index.ts';
import { UnitMisuseError } from '../../src/storage/store.ts';
import { StoreUnits, executorOf } from '../../src/storage/unit-of-work.ts';
import { forEachStore, useUnits } from '../support/stores.ts';

const account = (store: Store, email: string) =>
  store.db.insertInto('accounts').values({ id: randomUUID(), email, password_hash: 'x', plan: 'free', created_at: Date.now() });
const exists = async (store: Store, email: string) =>
  (await store.read.first(store.db.selectFrom('accounts').select('email').where('email', '=', email))) !== undefined;

// On SQLite a unit runs inside a group-commit batch: awaiting anything but its own statements
// would stall every read and write of the process. It must fail at once, naming the cause.
describe('unit of work misuse on SQLite', () => {
  const ctx = useUnits('sqlite');

  it('fails a unit that reads through the store instead of the unit, at once, and the batch goes on', async () => {
    const started = Date.now();
    const misuse = ctx.units.run(async (unit) => {
      await executorOf(unit).run(account(ctx.store, 'misuse-read@example.com'));
      await ctx.store.read.first(ctx.store.db.selectFrom('accounts').select('id').limit(1)); // waits for this very batch
      await executorOf(unit).run(account(ctx.store, 'misuse-late@example.com'));
    });
    const neighbour = ctx.units.run((unit) => executorOf(unit).run(account(ctx.store, 'neighbour@example.com')));
    await expect(misuse).rejects.toThrow(UnitMisuseError);
    await expect(misuse).rejects.toThrow(/a read through the store/);
    await expect(neighbour).resolves.toBe(1);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await exists(ctx.store, 'misuse-read@example.com')).toBe(false); // rolled back with its unit
    expect(await exists(ctx.store, 'neighbour@example.com')).toBe(true);
    // The abandoned unit's last statement, run after the batch, never reaches the database.
    await ctx.store.write(async () => {});
    expect(await exists(ctx.store, 'misuse-late@example.com')).toBe(false);
  });

  it('fails a unit that awaits a foreign promise (a timer, I/O, another unit), and later writes still work', async () => {
    let release!: () => void;
    const foreign = new Promise<void>((resolve) => (release = resolve)); // stands for a timer or I/O
    let lateOutcome: unknown;
    const misuse = ctx.units.run(async (unit) => {
      await executorOf(unit).run(account(ctx.store, 'misuse-timer@example.com'));
      await foreign;
      try {
        await executorOf(unit).run(account(ctx.store, 'misuse-timer-late@example.com'));
      } catch (error) {
        lateOutcome = error;
        throw error;
      }
    });
    await expect(misuse).rejects.toThrow(/awaited something other than its own statements/);
    const nested = ctx.units.run(async () => {
      await ctx.units.run((inner) => executorOf(inner).run(account(ctx.store, 'nested@example.com'))); // a second unit, not this one
    });
    await expect(nested).rejects.toThrow(UnitMisuseError);
    release(); // the abandoned unit goes on: its next statement must fail, not run outside a transaction
    await expect.poll(() => (lateOutcome as Error | undefined)?.message).toMatch(/after its unit of work had ended/);
    await ctx.units.run((unit) => executorOf(unit).run(account(ctx.store, 'after@example.com')));
    expect(await exists(ctx.store, 'misuse-timer@example.com')).toBe(false);
    expect(await exists(ctx.store, 'misuse-timer-late@example.com')).toBe(false);
    expect(await exists(ctx.store, 'after@example.com')).toBe(true);
  });
});

forEachStore('unit of work', (kind) => {
  const ctx = useUnits(kind);

  it('joins the caller unit: every write in it commits together or not at all', async () => {
    const both = (suffix: string, fail: boolean) =>
      ctx.units.run(async (outer) => {
        await ctx.units.run((unit) => executorOf(unit).run(account(ctx.store, `first-${suffix}@example.com`)), outer);
        await ctx.units.run((unit) => executorOf(unit).run(account(ctx.store, `second-${suffix}@example.com`)), outer);
        if (fail) throw new Error('the second service refused');
      });
    await expect(both('rollback', true)).rejects.toThrow('the second service refused');
    expect(await exists(ctx.store, 'first-rollback@example.com')).toBe(false);
    await both('commit', false);
    expect(await exists(ctx.store, 'first-commit@example.com')).toBe(true);
    expect(await exists(ctx.store, 'second-commit@example.com')).toBe(true);
  });

  it('runs in-unit subscribers inside the unit: what they write rolls back with the change', async () => {
    const bus = new EventBus();
    const units = new StoreUnits(ctx.store, bus);
    bus.subscribe(async (event, unit) => void (await executorOf(unit).run(account(ctx.store, `audit-${isLicenseEvent(event) ? event.license.key : 'purchase' in event ? event.purchase.id : event.license.key}@example.com`))));
    const license = { key: 'K', accountId: 'a', productId: 'p', type: 'perpetual', expiresAt: null, revoked: false, email: null, maxDevices: 1, createdAt: 0, entitlements: [] as string[], trial: false, metadata: {} } as const;
    await units.run((unit) => unit.emit({ type: 'license.created', actor: { type: 'public' }, occurredAt: 0, license: { ...license, key: 'kept' } }));
    await expect(
      units.run(async (unit) => {
        await unit.emit({ type: 'license.created', actor: { type: 'public' }, occurredAt: 0, license: { ...license, key: 'dropped' } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await exists(ctx.store, 'audit-kept@example.com')).toBe(true);
    expect(await exists(ctx.store, 'audit-dropped@example.com')).toBe(false);
  });
});

import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { inviteToFirstUnit, type Unit, type UnitGuest } from '../../src/core/unit-of-work.ts';
import type { Store } from '../../src/storage/index.ts';
import { executorOf } from '../../src/storage/unit-of-work.ts';
import { forEachStore, useUnits } from '../support/stores.ts';

const account = (store: Store, email: string) =>
  store.db.insertInto('accounts').values({ id: randomUUID(), email, password_hash: 'x', plan: 'free', created_at: Date.now() });
const exists = async (store: Store, email: string) =>
  (await store.read.first(store.db.selectFrom('accounts').select('email').where('email', '=', email))) !== undefined;

/** A guest that writes an account row and remembers how its unit ended. */
function guest(store: Store, email: string) {
  const seen: { entered: number; settled: boolean[] } = { entered: 0, settled: [] };
  const g: UnitGuest = {
    async enter(unit: Unit) {
      seen.entered++;
      await executorOf(unit).run(account(store, email));
    },
    settled: (committed) => seen.settled.push(committed),
  };
  return { g, seen };
}

forEachStore('a unit guest (inviteToFirstUnit)', (kind) => {
  const ctx = useUnits(kind);

  it('rides in the first unit opened synchronously, before its work, and commits with it', async () => {
    const { g, seen } = guest(ctx.store, 'guest-commit@example.com');
    const order: string[] = [];
    const done = inviteToFirstUnit(g, () =>
      ctx.units.run(async (unit) => {
        order.push(seen.entered ? 'guest, then work' : 'work first');
        await executorOf(unit).run(account(ctx.store, 'work-commit@example.com'));
      }),
    );
    await done;
    // A second unit of the same caller does not take it again.
    await inviteToFirstUnit(g, () => Promise.resolve()).then(() => ctx.units.run(async () => undefined));
    expect(order).toEqual(['guest, then work']);
    expect(seen).toEqual({ entered: 1, settled: [true] });
    expect(await exists(ctx.store, 'guest-commit@example.com')).toBe(true);
  });

  it('rolls back with the unit, and is told so', async () => {
    const { g, seen } = guest(ctx.store, 'guest-rollback@example.com');
    const failing = inviteToFirstUnit(g, () =>
      ctx.units.run(async () => {
        throw new Error('refused');
      }),
    );
    await expect(failing).rejects.toThrow('refused');
    expect(seen.settled).toEqual([false]);
    expect(await exists(ctx.store, 'guest-rollback@example.com')).toBe(false);
  });

  it('stays out of a unit opened after an await, and of a unit joined through `outer`', async () => {
    const { g, seen } = guest(ctx.store, 'guest-late@example.com');
    await inviteToFirstUnit(g, async () => {
      await Promise.resolve();
      await ctx.units.run(async () => undefined);
    });
    await ctx.units.run(async (outer) => inviteToFirstUnit(g, () => ctx.units.run(async () => undefined, outer)));
    expect(seen).toEqual({ entered: 0, settled: [] });
  });
});

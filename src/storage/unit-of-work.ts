import type { DomainEvent } from '../core/events.ts';
import { type EventBus, takeGuest, type Unit, type UnitGuest, type UnitRunner } from '../core/unit-of-work.ts';
import type { Executor, Store } from './store.ts';

/** A unit on a store: the transaction's executor, and the bus its events go to. */
class StoreUnit implements Unit {
  constructor(
    readonly tx: Executor,
    private readonly bus: EventBus,
  ) {}

  emit(event: DomainEvent): Promise<void> {
    return this.bus.publish(event, this);
  }
}

/** Units of work over one store: each is one `Store.write` (group-committed on SQLite). */
export class StoreUnits implements UnitRunner {
  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
  ) {}

  run<T>(work: (unit: Unit) => Promise<T>, outer?: Unit): Promise<T> {
    if (outer) return work(outer);
    const guest = takeGuest();
    if (guest) return this.withGuest(guest, work);
    return this.store.write((tx) => work(new StoreUnit(tx, this.bus)));
  }

  /** A new unit whose first statements are the guest's (see inviteToFirstUnit). */
  private async withGuest<T>(guest: UnitGuest, work: (unit: Unit) => Promise<T>): Promise<T> {
    let committed = false;
    try {
      const value = await this.store.write(async (tx) => {
        const unit = new StoreUnit(tx, this.bus);
        const entering = guest.enter(unit);
        if (entering) await entering;
        const result = await work(unit);
        await guest.leave?.(unit, result);
        return result;
      });
      committed = true;
      return value;
    } finally {
      guest.settled(committed);
    }
  }
}

/** What a read runs on: the caller's unit when it is part of one, else the store (committed rows). */
export function readerOf(store: Store, unit?: Unit): Executor {
  return unit ? executorOf(unit) : store.read;
}

/** What a repository runs its statements on inside `unit`. */
export function executorOf(unit: Unit): Executor {
  if (!(unit instanceof StoreUnit)) throw new Error('Not a unit of work of this store');
  return unit.tx;
}

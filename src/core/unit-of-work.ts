import type { DomainEvent } from './events.ts';

/**
 * One atomic change: every write made through it, the events it emits and what their
 * subscribers write commit together or not at all. Opaque to the domain: a service opens one
 * (or joins the caller's) and hands it to repositories, which bind their statements to it.
 */
export interface Unit {
  /** Publishes `event` to the in-unit subscribers, which write in this same unit. */
  emit(event: DomainEvent): Promise<void>;
}

export interface UnitRunner {
  /**
   * Runs `work` in a new unit, or inside `outer` when the caller already has one (several
   * services' writes in one unit). On SQLite `work` may await only statements run through the
   * unit (its repositories) and other services' calls that join it: anything else fails the unit.
   */
  run<T>(work: (unit: Unit) => Promise<T>, outer?: Unit): Promise<T>;
}

/** Runs inside the unit that emitted the event; what it writes commits with the change. */
export type EventSubscriber = (event: DomainEvent, unit: Unit) => Promise<void> | void;

const DONE = Promise.resolve();

/** The in-unit publish/subscribe: subscribers register at wiring time, in order. */
export class EventBus {
  private readonly subscribers: EventSubscriber[] = [];

  subscribe(subscriber: EventSubscriber): void {
    this.subscribers.push(subscriber);
  }

  publish(event: DomainEvent, unit: Unit): Promise<void> {
    // The hot paths emit with no subscriber most of the time: no async frame for nothing.
    return this.subscribers.length === 0 ? DONE : this.deliver(event, unit);
  }

  private async deliver(event: DomainEvent, unit: Unit): Promise<void> {
    for (const subscriber of this.subscribers) await subscriber(event, unit);
  }
}

/**
 * Work that rides in the first unit its caller opens, ahead of the caller's own work, and is told
 * whether that unit committed: how a request's Idempotency-Key is recorded in the same atomic,
 * durable write as the change it guards (http/idempotency.ts).
 */
export interface UnitGuest {
  /** Before the caller's work, inside the unit; undefined when it has nothing to write there. */
  enter(unit: Unit): Promise<void> | undefined;
  /** After the caller's work, still inside the unit, with the value it returned. */
  leave?(unit: Unit, value: unknown): Promise<void>;
  settled(committed: boolean): void;
}

let waitingGuest: UnitGuest | undefined;

/**
 * Calls `fn` so that the first unit it opens *synchronously* (before its first await) takes
 * `guest` in. A guest no unit took stays out, which its owner sees from never being settled: it
 * must then record itself on its own. Synchronous on purpose: an AsyncLocalStorage would follow
 * awaits too, but on Node 20 it slows every promise of the process (docs/decisions/operations.md).
 */
export function inviteToFirstUnit<T>(guest: UnitGuest, fn: () => T): T {
  waitingGuest = guest;
  try {
    return fn();
  } finally {
    waitingGuest = undefined;
  }
}

/** For UnitRunner implementations: the guest waiting for the unit being opened, taken once. */
export function takeGuest(): UnitGuest | undefined {
  const guest = waitingGuest;
  waitingGuest = undefined;
  return guest;
}

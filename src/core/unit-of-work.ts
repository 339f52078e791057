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

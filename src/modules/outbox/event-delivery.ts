import { type DomainEvent, type DomainEventType, eventAccountId } from '../../core/events.ts';
import type { EventBus } from '../../core/unit-of-work.ts';
import type { Job, Outbox } from './outbox.ts';
import type { JobConsumer } from './worker.ts';

/** Something done with domain events after their change committed (operator webhooks, say). */
export interface EventConsumer {
  readonly name: string;
  readonly description: string;
  /** The event types it takes; `*` takes all. */
  readonly types: readonly DomainEventType[] | '*';
  /** Runs in the worker, after commit; throws to be retried with backoff (dead after the last attempt). */
  handle(event: DomainEvent, job: Job): Promise<void>;
}

export const eventJobKind = (consumer: string): string => `event:${consumer}`;

/**
 * Delivers domain events to an asynchronous consumer through the outbox: each matching event
 * becomes a job in the unit that emitted it (never lost, never sent for a change that rolled
 * back), which the outbox worker hands to the consumer after the commit, with retries.
 */
export function deliverEvents(bus: EventBus, outbox: Outbox, jobConsumers: Record<string, JobConsumer>, consumer: EventConsumer): void {
  const kind = eventJobKind(consumer.name);
  if (jobConsumers[kind]) throw new Error(`An event consumer named ${consumer.name} is registered already`);
  const takes = consumer.types === '*' ? () => true : (type: DomainEventType) => (consumer.types as readonly DomainEventType[]).includes(type);
  bus.subscribe(async (event, unit) => {
    if (takes(event.type)) await outbox.enqueue(unit, kind, event, { accountId: eventAccountId(event) });
  });
  jobConsumers[kind] = { description: consumer.description, handle: (job) => consumer.handle(job.payload as DomainEvent, job) };
}

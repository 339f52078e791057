import type { Unit } from '../../core/unit-of-work.ts';
import type { Outbox } from '../outbox/outbox.ts';
import type { JobConsumer } from '../outbox/worker.ts';
import { SENDS_AT_ONCE } from './transport.ts';
import type { MailTransport, OutgoingMail } from './types.ts';

/** The outbox job kind e-mail travels as. */
export const MAIL_JOB = 'mail';

/** E-mail on the general outbox: queued in the caller's unit, so it exists exactly when the change does. */
export class MailQueue {
  constructor(private readonly outbox: Outbox) {}

  /** Queues `mail` inside `unit`; returns the job id (which the Message-ID is derived from). */
  queue(unit: Unit, mail: OutgoingMail): Promise<string> {
    return this.outbox.enqueue(unit, MAIL_JOB, mail);
  }
}

/** The outbox consumer that sends `mail` jobs through a transport (SMTP, or .eml files). */
export function mailConsumer(transport: MailTransport): JobConsumer {
  return {
    description: transport.description,
    // Its own worker: no backlog of another kind (webhooks to endpoints that never answer) delays an e-mail.
    lane: 'mail',
    concurrency: SENDS_AT_ONCE,
    handle: (job) => transport.send({ ...(job.payload as OutgoingMail), id: job.id, attempts: job.attempts, createdAt: job.createdAt }),
    close: () => transport.close(),
  };
}

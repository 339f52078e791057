import type { Unit } from '../../core/unit-of-work.ts';
import type { Outbox } from '../outbox/outbox.ts';
import type { JobConsumer } from '../outbox/worker.ts';
import { SENDS_AT_ONCE } from './transport.ts';
import { type BrandLookup, NEUTRAL } from './brand.ts';
import { brandMail } from './templates.ts';
import type { MailTransport, OutgoingMail } from './types.ts';

/** The outbox job kind e-mail travels as. */
export const MAIL_JOB = 'mail';

/** E-mail on the general outbox: queued in the caller's unit, so it exists exactly when the change does. */
export class MailQueue {
  constructor(
    private readonly outbox: Outbox,
    private readonly brands: BrandLookup = async () => NEUTRAL,
  ) {}

  /** Queues `mail` inside `unit`; returns the job id (which the Message-ID is derived from). */
  queue(unit: Unit, mail: OutgoingMail): Promise<string> {
    return this.outbox.enqueue(unit, MAIL_JOB, brandMail(mail, NEUTRAL));
  }

  /**
   * Every e-mail to a vendor's customers goes through here: the vendor's brand fills the header and
   * signature `layout` left for it (templates.brandMail) and names the sender. `accountId` null: the e-mail speaks for several vendors, in the neutral look.
   */
  async queueFor(unit: Unit, accountId: string | null, mail: OutgoingMail): Promise<string> {
    const brand = accountId === null ? NEUTRAL : await this.brands(accountId, unit);
    return this.outbox.enqueue(unit, MAIL_JOB, { ...brandMail(mail, brand), fromName: brand.name });
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

import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import type { Outbox } from '../outbox/outbox.ts';
import { DEFAULT_WORKER_SETTINGS, type Housekeeping, type JobConsumer, OutboxWorker, type WorkerSettings } from '../outbox/worker.ts';
import { MAIL_JOB, mailConsumer } from './queue.ts';
import { createMailTransport } from './transport.ts';
import type { MailTransport } from './types.ts';

export interface MailOptions {
  /** Replaces the SMTP / .eml transport (tests). */
  transport?: MailTransport;
  worker?: Partial<WorkerSettings>;
}

/**
 * The outbox worker lives and dies with the app: started when it is ready, stopped (batch
 * finished) on close. It sends e-mail through the configured transport and works the other job
 * kinds the services registered (event consumers).
 */
export function registerOutboxWorker(
  app: FastifyInstance,
  services: { outbox: Outbox; jobConsumers: Record<string, JobConsumer>; housekeeping?: readonly Housekeeping[]; clock: () => number },
  config: Config,
  options: MailOptions = {},
): OutboxWorker {
  const transport = options.transport ?? createMailTransport({ smtpUrl: config.smtpUrl, mailFrom: config.mailFrom, dataDir: config.dataDir }, app.log);
  const consumers = { ...services.jobConsumers, [MAIL_JOB]: mailConsumer(transport) };
  const settings = { ...DEFAULT_WORKER_SETTINGS, concurrency: config.outboxConcurrency, ...options.worker };
  const worker = new OutboxWorker(services.outbox, consumers, app.log, settings, services.clock, services.housekeeping);
  app.addHook('onReady', async () => worker.start());
  app.addHook('onClose', async () => worker.stop());
  return worker;
}

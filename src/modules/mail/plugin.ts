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
 * The outbox workers live and die with the app: started when it is ready, stopped (batch finished)
 * on close. One worker per lane (JobConsumer.lane): e-mail through the configured transport in its
 * own, the other job kinds the services registered (webhook deliveries, event consumers) in the
 * default one, which also runs the hourly housekeeping. Each has OUTBOX_CONCURRENCY slots.
 */
export function registerOutboxWorker(
  app: FastifyInstance,
  services: { outbox: Outbox; jobConsumers: Record<string, JobConsumer>; housekeeping?: readonly Housekeeping[]; clock: () => number },
  config: Config,
  options: MailOptions = {},
): OutboxWorker[] {
  const transport = options.transport ?? createMailTransport({ smtpUrl: config.smtpUrl, mailFrom: config.mailFrom, dataDir: config.dataDir, logLinks: config.logMailLinks }, app.log);
  const consumers = { ...services.jobConsumers, [MAIL_JOB]: mailConsumer(transport) };
  const settings = { ...DEFAULT_WORKER_SETTINGS, concurrency: config.outboxConcurrency, caps: config.outboxCaps, ...options.worker };
  const lanes = new Map<string, Record<string, JobConsumer>>();
  for (const [kind, consumer] of Object.entries(consumers)) {
    const lane = consumer.lane ?? DEFAULT_LANE;
    lanes.set(lane, { ...lanes.get(lane), [kind]: consumer });
  }
  const workers = [...lanes].map(
    ([lane, own]) => new OutboxWorker(services.outbox, own, app.log, settings, services.clock, lane === DEFAULT_LANE ? services.housekeeping : []),
  );
  app.addHook('onReady', async () => workers.forEach((w) => w.start()));
  app.addHook('onClose', async () => void (await Promise.all(workers.map((w) => w.stop()))));
  return workers;
}

const DEFAULT_LANE = 'default';

import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import type { Outbox } from './outbox.ts';
import { createMailTransport } from './transport.ts';
import type { MailTransport } from './types.ts';
import { DEFAULT_WORKER_SETTINGS, OutboxWorker, type WorkerSettings } from './worker.ts';

export interface MailOptions {
  /** Replaces the SMTP / .eml transport (tests). */
  transport?: MailTransport;
  worker?: Partial<WorkerSettings>;
}

/** The outbox worker lives and dies with the app: started when it is ready, stopped (batch finished) on close. */
export function registerMailWorker(app: FastifyInstance, outbox: Outbox, config: Config, options: MailOptions = {}): OutboxWorker {
  const transport = options.transport ?? createMailTransport({ smtpUrl: config.smtpUrl, mailFrom: config.mailFrom, dataDir: config.dataDir }, app.log);
  const worker = new OutboxWorker(outbox, transport, app.log, { ...DEFAULT_WORKER_SETTINGS, ...options.worker });
  app.addHook('onReady', async () => worker.start());
  app.addHook('onClose', async () => worker.stop());
  return worker;
}

import type { FastifyInstance } from 'fastify';
import { FLUSH_INTERVAL_MS, type ActivityService } from './service.ts';

/** Flushes the activity counts every 10 s while the app runs, and once more when it closes. */
export function registerActivityFlush(app: FastifyInstance, activity: ActivityService): void {
  let timer: NodeJS.Timeout | undefined;
  const flush = () => activity.flush().catch((err: unknown) => app.log.error({ err }, 'activity flush failed; the counts are kept for the next one'));
  app.addHook('onReady', async () => {
    timer = setInterval(flush, FLUSH_INTERVAL_MS);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await flush();
  });
}

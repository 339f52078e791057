import type { FastifyInstance } from 'fastify';
import { type DeviceSightings, SIGHTINGS_FLUSH_MS } from './device-sightings.ts';

/** Writes the devices' lastSeenAt every minute while the app runs, and once more when it closes. */
export function registerSightingsFlush(app: FastifyInstance, sightings: DeviceSightings): void {
  let timer: NodeJS.Timeout | undefined;
  const flush = () => sightings.flush().catch((err: unknown) => app.log.error({ err }, 'lastSeenAt flush failed; the sightings are kept for the next one'));
  app.addHook('onReady', async () => {
    timer = setInterval(flush, SIGHTINGS_FLUSH_MS);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await flush();
  });
}

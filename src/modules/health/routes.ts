import type { FastifyPluginAsync } from 'fastify';
import type { Store } from '../../storage/index.ts';

/** Liveness (the process serves) and readiness (the store answers). */
export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  const schema = { hide: true };
  app.get('/healthz', { schema }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema }, async (req, reply) => {
    try {
      await store.ping();
      return { status: 'ok' };
    } catch (err) {
      req.log.warn({ err }, 'store not ready');
      return reply.status(503).send({ status: 'unavailable' });
    }
  });
};

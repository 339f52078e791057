import type { FastifyInstance } from 'fastify';
import { askFirst, confirmed, redirectWith, type ScreenOptions } from '../screen.ts';

/**
 * A payment provider's Disconnect button: asks first, then deletes the provider's webhook endpoint
 * and forgets the key (PaymentService.disconnect). Each provider's card has one.
 */
export function disconnectRoute(
  app: FastifyInstance,
  services: ScreenOptions['services'],
  o: { section: string; path: string; provider: string; label: string; stops: string; notice: string },
): void {
  app.post(o.path, async (req, reply) => {
    if (!confirmed(req)) {
      return askFirst(req, reply, {
        section: o.section,
        title: `Disconnect ${o.label}?`,
        text: `The webhook endpoint at ${o.label} is deleted and the key forgotten: ${o.stops} stop creating licenses until you connect again. Existing licenses stay.`,
        action: o.path,
        button: `Disconnect ${o.label}`,
        cancel: o.section,
      });
    }
    await services.payments.disconnect(req.dashboard.principal, o.provider);
    return redirectWith(reply, o.section, o.notice);
  });
}

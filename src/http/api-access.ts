import type { Area } from '../core/access.ts';

/**
 * The area each server-API route touches, by `METHOD path` as the route is registered: the one
 * place a route's scope is declared. http/auth.ts looks the request's route up here and asks
 * core/access.ts whether the key's scope reaches it (GET and HEAD read, every other method writes).
 * A route missing here is refused to every key (403 `insufficient_scope`), and
 * test/api/scopes.security.test.ts fails naming the line to add.
 */
export const API_ACCESS: Readonly<Record<string, Area>> = {
  'POST /api/v1/products': 'products',
  'GET /api/v1/products': 'products',
  'GET /api/v1/products/:productId': 'products',
  'PATCH /api/v1/products/:productId': 'products',
  'DELETE /api/v1/products/:productId': 'products',
  'PUT /api/v1/products/:productId/image': 'products',
  'DELETE /api/v1/products/:productId/image': 'products',
  'POST /api/v1/products/:productId/offers': 'products',
  'GET /api/v1/products/:productId/offers': 'products',
  'DELETE /api/v1/products/:productId/offers/:offerId': 'products',

  'POST /api/v1/licenses': 'licenses',
  'GET /api/v1/licenses': 'licenses',
  'PATCH /api/v1/licenses': 'licenses',
  'DELETE /api/v1/licenses': 'licenses',
  'POST /api/v1/licenses/send-email': 'licenses',
  'POST /api/v1/licenses/activate': 'licenses',
  'POST /api/v1/licenses/validate': 'licenses',
  'POST /api/v1/licenses/devices/:deviceId/remove': 'licenses',
  'POST /api/v1/licenses/devices/reset': 'licenses',
  'GET /api/v1/products/:productId/licenses': 'licenses',
  'GET /api/v1/licenses/events': 'licenses',
  'GET /api/v1/events': 'licenses',
  'DELETE /api/v1/licenses/subscription': 'licenses',
  'POST /api/v1/licenses/rotate-key': 'licenses',

  'GET /api/v1/products/:productId/license-token': 'tokens',
  'PUT /api/v1/products/:productId/license-token': 'tokens',
  'POST /api/v1/products/:productId/license-token/key-pair': 'tokens',

  'POST /api/v1/webhooks': 'webhooks',
  'GET /api/v1/webhooks': 'webhooks',
  'GET /api/v1/webhooks/:webhookId': 'webhooks',
  'PATCH /api/v1/webhooks/:webhookId': 'webhooks',
  'DELETE /api/v1/webhooks/:webhookId': 'webhooks',
  'GET /api/v1/webhooks/:webhookId/deliveries': 'webhooks',
  'GET /api/v1/webhooks/:webhookId/deliveries/:deliveryId': 'webhooks',
  'POST /api/v1/webhooks/:webhookId/test': 'webhooks',
  'POST /api/v1/webhooks/:webhookId/deliveries/:deliveryId/redeliver': 'webhooks',

  'PUT /api/v1/payments/stripe': 'payments',
  'GET /api/v1/payments/stripe': 'payments',
  'DELETE /api/v1/payments/stripe': 'payments',
  'POST /api/v1/payments/stripe/refresh-endpoint': 'payments',
  'PUT /api/v1/payments/lemonsqueezy': 'payments',
  'GET /api/v1/payments/lemonsqueezy': 'payments',
  'DELETE /api/v1/payments/lemonsqueezy': 'payments',
  'POST /api/v1/payments/lemonsqueezy/refresh-endpoint': 'payments',
  'PUT /api/v1/payments/polar': 'payments',
  'GET /api/v1/payments/polar': 'payments',
  'DELETE /api/v1/payments/polar': 'payments',
  'POST /api/v1/payments/polar/refresh-endpoint': 'payments',
  'POST /api/v1/products/:productId/prices': 'payments',
  'GET /api/v1/products/:productId/prices': 'payments',
  'DELETE /api/v1/products/:productId/prices/:priceId': 'payments',
  'GET /api/v1/payments/purchases': 'purchases',
  'GET /api/v1/payments/purchases/:purchaseId/invoice': 'purchases',
  'POST /api/v1/payments/purchases/:purchaseId/fulfil': 'purchases',

  'POST /api/v1/portal/sessions/private': 'portal',
};

/** The key a route is declared under. */
export const routeKey = (method: string, url: string): string => `${method} ${url}`;

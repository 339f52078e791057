import { createHmac } from 'node:crypto';
import type { DomainEvent, LicenseSnapshot } from '../../core/events.ts';
import { toIso } from '../../core/time.ts';
import { deviceView, licenseChangesView, licenseView } from '../licenses/schemas.ts';
import type { Device, License } from '../licenses/types.ts';
import { purchaseSnapshotView } from '../payments/schemas.ts';
import { subscriptionView } from '../subscriptions/schemas.ts';

/**
 * A webhook body lists at most this many devices (a license's active devices, or those a reset
 * removed), with the full count beside them: a license may hold 100,000 devices, and every
 * activation's body listing them all made activation cost and delivery size grow with the license.
 */
export const WEBHOOK_DEVICES_MAX = 100;

/** Up to `limit` of the license's active devices after the event, and how many it has (read in the event's unit). */
export type DevicesLookup = (license: LicenseSnapshot, limit: number) => Promise<{ devices: Device[]; count: number }>;

const fromSnapshot = (l: LicenseSnapshot, activeDevices: Device[]): License => ({
  key: l.key,
  accountId: l.accountId,
  productId: l.productId,
  type: l.type,
  expiresAt: l.expiresAt,
  revoked: l.revoked,
  email: l.email,
  maxDevices: l.maxDevices,
  createdAt: l.createdAt,
  entitlements: l.entitlements,
  trial: l.trial,
  metadata: l.metadata,
  activeDevices,
});

/** The license in the server API's shape, its devices capped, and `activeDeviceCount`. */
async function licenseData(snapshot: LicenseSnapshot, devicesOf: DevicesLookup) {
  const { devices, count } = await devicesOf(snapshot, WEBHOOK_DEVICES_MAX);
  return { ...licenseView(fromSnapshot(snapshot, devices)), activeDeviceCount: count };
}

/**
 * THE serialization of an event into a webhook body, `{id, type, createdAt, data}`: one switch on
 * the event type, so each type's `data` is decided here and nowhere else. `data.license` is the
 * license in the server API's shape (GET /api/v1/licenses) after the change, with at most
 * WEBHOOK_DEVICES_MAX of its devices and `activeDeviceCount`; device events add the device, a reset
 * the devices removed (capped the same, with `deviceCount`), an update the fields changed. A deleted
 * license is shown as it was, with no devices. Purchase events carry the purchase as the purchases
 * API shows it (a refund or dispute adds its `reason`); subscription events the license and its
 * subscription as license views show it.
 */
export async function webhookBody(event: DomainEvent, eventId: string, devicesOf: DevicesLookup): Promise<string> {
  let data: Record<string, unknown>;
  switch (event.type) {
    case 'license.created':
      data = { license: await licenseData(event.license, devicesOf) };
      break;
    case 'license.updated':
      data = { license: await licenseData(event.license, devicesOf), changes: licenseChangesView(event.changes) };
      break;
    case 'license.deleted':
      data = { license: { ...licenseView(fromSnapshot(event.license, [])), activeDeviceCount: 0 } };
      break;
    case 'device.activated':
    case 'device.removed':
    case 'device.released':
      data = { license: await licenseData(event.license, devicesOf), device: deviceView(event.device) };
      break;
    case 'device.updated':
      data = { license: await licenseData(event.license, devicesOf), device: deviceView(event.device), changes: event.changes };
      break;
    case 'devices.reset':
      data = {
        license: await licenseData(event.license, devicesOf),
        devices: event.devices.slice(0, WEBHOOK_DEVICES_MAX).map(deviceView),
        deviceCount: event.devices.length,
      };
      break;
    case 'purchase.completed':
      data = { purchase: purchaseSnapshotView(event.purchase) };
      break;
    case 'purchase.refunded':
      data = { purchase: purchaseSnapshotView(event.purchase), reason: event.reason };
      break;
    case 'subscription.renewed':
    case 'subscription.updated':
    case 'subscription.canceled':
    case 'subscription.payment_failed':
      data = { license: await licenseData(event.license, devicesOf), subscription: subscriptionView(event.subscription) };
      break;
  }
  return JSON.stringify({ id: eventId, type: event.type, createdAt: toIso(event.occurredAt), data });
}

/** The type of the test event an operator sends on demand; no endpoint subscribes to it, each gets it only when asked. */
export const PING_EVENT = 'ping';

/** The test event's body: the usual envelope, `data` naming the endpoint it was sent to. */
export function pingBody(eventId: string, endpoint: { id: string; url: string }, at: number): string {
  return JSON.stringify({ id: eventId, type: PING_EVENT, createdAt: toIso(at), data: { endpoint: { id: endpoint.id, url: endpoint.url } } });
}

/** `Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the whole `whsec_...` string. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

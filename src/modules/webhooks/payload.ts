import { createHmac } from 'node:crypto';
import type { DomainEvent, LicenseSnapshot } from '../../core/events.ts';
import { toIso } from '../../core/time.ts';
import { deviceView, licenseChangesView, licenseView } from '../licenses/schemas.ts';
import type { License } from '../licenses/types.ts';
import { purchaseSnapshotView } from '../payments/schemas.ts';

/** The license as the event left it, with its devices (read in the event's unit). */
export type LicenseLookup = (snapshot: LicenseSnapshot) => Promise<License>;

const fromSnapshot = (l: LicenseSnapshot): License => ({
  key: l.key,
  userId: l.accountId,
  productId: l.productId,
  type: l.type,
  expiresAt: l.expiresAt,
  revoked: l.revoked,
  email: l.email,
  maxDevices: l.maxDevices,
  createdAt: l.createdAt,
  activeDevices: [],
});

/**
 * THE serialization of an event into a webhook body, `{id, type, createdAt, data}`: one switch on
 * the event type, so each type's `data` is decided here and nowhere else. `data.license` is the
 * license in the server API's shape (GET /api/v1/licenses) after the change; device events add
 * the device, a reset the devices removed, an update the fields changed. A deleted license is
 * shown as it was, with no devices. Purchase events carry the purchase as the purchases API shows it
 * (a refund or dispute adds its `reason`).
 */
export async function webhookBody(event: DomainEvent, eventId: string, licenseOf: LicenseLookup): Promise<string> {
  let data: Record<string, unknown>;
  switch (event.type) {
    case 'license.created':
      data = { license: licenseView(await licenseOf(event.license)) };
      break;
    case 'license.updated':
      data = { license: licenseView(await licenseOf(event.license)), changes: licenseChangesView(event.changes) };
      break;
    case 'license.deleted':
      data = { license: licenseView(fromSnapshot(event.license)) };
      break;
    case 'device.activated':
    case 'device.removed':
      data = { license: licenseView(await licenseOf(event.license)), device: deviceView(event.device) };
      break;
    case 'devices.reset':
      data = { license: licenseView(await licenseOf(event.license)), devices: event.devices.map(deviceView) };
      break;
    case 'purchase.completed':
      data = { purchase: purchaseSnapshotView(event.purchase) };
      break;
    case 'purchase.refunded':
      data = { purchase: purchaseSnapshotView(event.purchase), reason: event.reason };
      break;
  }
  return JSON.stringify({ id: eventId, type: event.type, createdAt: toIso(event.occurredAt), data });
}

/** `Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the whole `whsec_...` string. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

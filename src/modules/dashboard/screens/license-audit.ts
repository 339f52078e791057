import { html, type SafeHtml } from '../../../http/html.ts';
import type { Actor, Principal } from '../../../core/principal.ts';
import type { AuditEntry } from '../../audit/service.ts';
import type { ScreenOptions } from '../screen.ts';
import { emptyState, table, when } from '../views.ts';

type Services = ScreenOptions['services'];
const PAGE_SIZE = 50;

export const TYPE_LABEL: Record<AuditEntry['type'], string> = {
  'license.created': 'Created',
  'license.updated': 'Updated',
  'license.revoked': 'Revoked',
  'license.deleted': 'Deleted',
  'device.activated': 'Device activated',
  'device.updated': 'Device renamed',
  'device.removed': 'Device removed',
  'device.released': 'Lease lapsed: device released',
  'devices.reset': 'Devices reset',
};

function actorLabel(actor: Actor, o: { apiKeys: Map<string, string>; principal: Principal; email: string }): string {
  switch (actor.type) {
    case 'api_key':
      return `API key ${o.apiKeys.get(actor.apiKeyId) ?? actor.apiKeyId}`;
    case 'dashboard_user':
      // The member as they were when they acted; entries from before members name the account.
      return actor.email ? `Dashboard (${actor.email})` : actor.userId === o.principal.accountId ? `Dashboard (${o.email})` : 'Dashboard';
    case 'cli':
      return 'Command line';
    case 'public':
      return 'App (public API)';
    case 'portal':
      return `Portal (${actor.email})`;
    case 'provider':
      return `Purchase (${actor.provider})`;
    case 'lease':
      return 'Lease (no heartbeat)';
  }
}

const valueText = (v: unknown) => (v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
const deviceText = (d: unknown) => {
  const { name, identifier } = (d ?? {}) as { name?: string; identifier?: string };
  return `${name ?? ''} (${identifier ?? ''})`;
};

/** What changed, as text: fields as "from → to", devices by name. */
function changesOf(e: AuditEntry): SafeHtml | string {
  const c = e.changes;
  if (!c) return '—';
  if (e.type === 'device.updated') {
    const { from, to } = (c.name ?? {}) as { from?: unknown; to?: unknown };
    return `${valueText(from)} → ${deviceText({ ...(c.device as object), name: valueText(to) })}`;
  }
  if ('device' in c) return deviceText(c.device);
  if ('devices' in c) return (c.devices as unknown[]).map(deviceText).join(', ') || 'No device';
  return html`${Object.entries(c).map(([field, change]) => {
    const { from, to } = (change ?? {}) as { from?: unknown; to?: unknown };
    return html`<span class="change">${field}: ${e.type === 'license.created' ? valueText(to) : `${valueText(from)} → ${valueText(to)}`}</span><br>`;
  })}`;
}

/**
 * Audit entries as a table: time, change, who, what; with `withLicense`, each entry's license
 * (a link to its page) too, for the account-wide log.
 */
export async function auditTable(services: Services, principal: Principal, email: string, entries: AuditEntry[], o: { caption: string; withLicense?: boolean }): Promise<SafeHtml> {
  const apiKeys = new Map((await services.apiKeys.list(principal)).map((k) => [k.id, k.name]));
  const headers = o.withLicense ? ['Time', 'Change', 'License', 'By', 'Details'] : ['Time', 'Change', 'By', 'Details'];
  return table(
    o.caption,
    headers,
    entries.map(
      (e) =>
        html`<tr><td>${when(e.createdAt)}</td><td>${TYPE_LABEL[e.type]}</td>${
          o.withLicense ? html`<td><a class="key-text" href="/dashboard/licenses/${encodeURIComponent(e.licenseKey)}">${e.licenseKey}</a></td>` : ''
        }<td>${actorLabel(e.actor, { apiKeys, principal, email })}</td><td>${changesOf(e)}</td></tr>`,
    ),
  );
}

/** The license page's audit log (the audit service's own list, newest first), paged by its cursor. */
export async function auditSection(services: Services, principal: Principal, email: string, key: string, path: string, cursor: string | undefined): Promise<SafeHtml> {
  const page = await services.audit.list(principal, key, { limit: PAGE_SIZE, cursor });
  const body = page.data.length === 0 ? emptyState(cursor ? 'No older entries.' : 'No changes recorded yet.') : await auditTable(services, principal, email, page.data, { caption: 'Audit log' });
  const pager = html`<div class="pager">${cursor ? html`<a href="${path}#audit-title">Newest entries</a>` : html`<span></span>`}${
    page.nextCursor ? html`<a class="button secondary" href="${path}?auditCursor=${page.nextCursor}#audit-title">Older entries</a>` : ''
  }</div>`;
  return html`<section class="spaced" aria-labelledby="audit-title"><h2 id="audit-title">Audit log</h2>${body}${pager}</section>`;
}

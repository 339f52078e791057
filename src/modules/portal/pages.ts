import { html, type SafeHtml } from '../../http/html.ts';
import { type Notice, renderNotice as notice } from '../../http/web/notice.ts';
import { type PageBrand, layout as webLayout } from '../../http/web/pages.ts';
import { devicesLabel, formatDate, licenseTypeLabel } from '../mail/format.ts';
import { type DevicePage, DEVICES_PER_PAGE, type PortalDevice, type PortalLicense } from './service.ts';

export type { Notice };

const STATUS_LABEL: Record<PortalLicense['status'], string> = {
  active: 'Active',
  expired: 'Expired',
  revoked: 'Revoked',
  fallbacked: 'Expired (limited access)',
};

/** The portal's frame: the web kit's layout with the portal's name, assets and footer. */
const layout = (title: string, content: SafeHtml, options: { narrow?: boolean; who?: SafeHtml; brand?: PageBrand } = {}): string =>
  webLayout({
    title,
    site: 'License portal',
    home: '/portal',
    stylesheet: '/portal/assets/portal.css',
    script: '/portal/assets/portal.js',
    content,
    ...options,
    footer: 'Links sent by e-mail work for 2 hours. Keep your license keys private.',
  });

export function requestPage(d: { email: string; csrf: string; notice?: Notice; error?: string }): string {
  return layout(
    'Get a link',
    html`<h1>Manage your licenses</h1>
<p class="lead">Enter the e-mail address you used for your purchase. We will send you a link to your license portal.</p>
${notice(d.notice)}
<form class="panel stack" method="post" action="/portal/request" novalidate>
<input type="hidden" name="csrf" value="${d.csrf}">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${d.email}"${d.error ? html` aria-invalid="true" aria-describedby="email-error"` : ''}>
${d.error ? html`<p id="email-error" class="hint error-text">${d.error}</p>` : html`<p class="hint">The link works for 2 hours.</p>`}
<button type="submit">Send me a link</button>
</form>`,
    { narrow: true },
  );
}

export function messagePage(d: { title: string; text: string; action?: { text: string; href: string } }): string {
  return layout(
    d.title,
    html`<div class="panel">
<h1>${d.title}</h1>
<p class="lead">${d.text}</p>
${d.action && html`<a class="button" href="${d.action.href}">${d.action.text}</a>`}
</div>`,
    { narrow: true },
  );
}

export const notFoundPage = () =>
  messagePage({ title: 'Page not found', text: 'There is no page at this address. Your licenses are one e-mailed link away.', action: { text: 'Get a link to your licenses', href: '/portal/request' } });

export const invalidLinkPage = () =>
  messagePage({
    title: 'This link has expired',
    text: 'The link is no longer valid or was not recognized. Links from our e-mails work for 2 hours; ask for a new one and we will send it right away.',
    action: { text: 'Get a new link', href: '/portal/request' },
  });

function resetControls(l: PortalLicense, csrf: string): SafeHtml {
  if (!l.reset.allowed) {
    return html`<p class="hint">Device resets are not available in the portal for this product. Contact support to move your license to another device.</p>`;
  }
  const { remaining, nextAt, limit, windowDays } = l.reset;
  if (nextAt !== null) {
    return html`<div class="reset"><p class="hint">You have used all device resets for now. Next reset possible on <strong>${formatDate(nextAt)}</strong>.</p></div>`;
  }
  const left = `${remaining} of ${limit} ${limit === 1 ? 'reset' : 'resets'} left in ${windowDays} days.`;
  if (l.deviceCount === 0) return html`<div class="reset"><p class="hint">Nothing to reset. ${left}</p></div>`;
  return html`<form class="reset" method="post" action="/portal/licenses/reset">
<input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="key" value="${l.key}">
<button type="submit" class="secondary" aria-describedby="reset-help-${l.key}">Reset devices…</button>
<p class="hint" id="reset-help-${l.key}">Signs out every device so you can activate the license again; or remove one device above. Either uses one reset. ${left}</p>
</form>`;
}

/** Whether a license's devices may be reset (all, or one) now: allowed, a reset left. */
const canReset = (l: PortalLicense) => l.reset.allowed && l.reset.nextAt === null;

/** A device's own "Remove…" button: its POST answers a confirmation page first. */
const removeButton = (l: PortalLicense, d: PortalDevice, csrf: string) =>
  html`<form method="post" action="/portal/licenses/reset"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${l.key}"><input type="hidden" name="device" value="${d.identifier}"><button type="submit" class="secondary small">Remove ${d.name}…</button></form>`;

const deviceList = (devices: PortalDevice[], remove?: { license: PortalLicense; csrf: string }) =>
  html`<ul class="devices">${devices.map(
    (d) =>
      html`<li><span><strong>${d.name}</strong><br><span class="device-id">${d.identifier}</span></span><span class="device-date">Activated ${formatDate(d.activationDate)}</span>${
        remove ? removeButton(remove.license, d, remove.csrf) : ''
      }</li>`,
  )}</ul>`;

/**
 * Asked before a reset or a device's removal: what it does, what it uses of the quota, and the same
 * form again with confirm=yes (no JavaScript needed).
 */
export function resetConfirmPage(d: { license: PortalLicense; device?: PortalDevice; csrf: string }): string {
  const l = d.license;
  const quota = l.reset.allowed ? `It uses one of your ${l.reset.remaining} ${l.reset.remaining === 1 ? 'reset' : 'resets'} left (${l.reset.limit} every ${l.reset.windowDays} days).` : '';
  const title = d.device ? `Remove ${d.device.name}?` : `Reset the devices of ${l.productName}?`;
  const what = d.device
    ? `${d.device.name} (${d.device.identifier}) is signed out of this license, and its place is free for another device.`
    : `${l.deviceCount === 1 ? 'The one device' : `All ${l.deviceCount} devices`} using this license ${l.deviceCount === 1 ? 'is' : 'are'} signed out; you can then activate it anywhere.`;
  return layout(
    title,
    html`<form class="panel" method="post" action="/portal/licenses/reset">
<h1>${title}</h1>
<p class="lead">${what} ${quota}</p>
<p><code>${l.key}</code></p>
<input type="hidden" name="csrf" value="${d.csrf}">
<input type="hidden" name="key" value="${l.key}">
${d.device ? html`<input type="hidden" name="device" value="${d.device.identifier}">` : ''}
<input type="hidden" name="confirm" value="yes">
<div class="form-foot"><button type="submit">${d.device ? 'Remove device' : 'Reset devices'}</button><a class="button secondary" href="/portal#license-${l.key}">Cancel</a></div>
</form>`,
    { narrow: true },
  );
}

const devicesHref = (key: string, page: number) => `/portal/licenses/${encodeURIComponent(key)}/devices${page > 1 ? `?page=${page}` : ''}`;

/** All of a license's devices, a page at a time. */
export function devicesPage(d: DevicePage & { page: number; pages: number; brand?: PageBrand }): string {
  const first = (d.page - 1) * DEVICES_PER_PAGE + 1;
  return layout(
    `Devices of ${d.productName}`,
    html`<p><a href="/portal#license-${d.key}">Back to your licenses</a></p>
<h1>Devices of ${d.productName}</h1>
<p class="lead"><code>${d.key}</code> · ${d.total} in use · ${devicesLabel(d.maxDevices).toLowerCase()}</p>
${d.total === 0 ? html`<p class="hint">No device is using this license yet.</p>` : deviceList(d.devices)}
<nav class="pager" aria-label="Device pages">
<p class="hint">${d.total === 0 ? '' : `Devices ${first} to ${first + d.devices.length - 1} of ${d.total} · page ${d.page} of ${d.pages}`}</p>
${d.page > 1 && html`<a class="button secondary" rel="prev" href="${devicesHref(d.key, d.page - 1)}">Previous</a>`}
${d.page < d.pages && html`<a class="button secondary" rel="next" href="${devicesHref(d.key, d.page + 1)}">Next</a>`}
</nav>`,
    { brand: d.brand },
  );
}

type PortalOffer = { id: string; kind: 'renewal' | 'upgrade'; name: string };

function licenseCard(l: PortalLicense, csrf: string, purchaseId: string | undefined, subscribed: boolean, offers: PortalOffer[], vendor: PageBrand | undefined): SafeHtml {
  const id = `license-${l.key}`;
  return html`<article class="card" id="${id}" aria-labelledby="${id}-title">
${vendor && html`<p class="vendor">${vendor.logo ? html`<img class="vendor-logo" src="${vendor.logo}" alt="">` : ''}From <strong>${vendor.name}</strong></p>`}
<div class="card-head"><h2 id="${id}-title">${l.productName}</h2><span class="badge ${l.status}">${STATUS_LABEL[l.status]}</span></div>
<div class="key"><code aria-label="License key">${l.key}</code><button type="button" class="secondary" data-copy="${l.key}" hidden data-copied="License key copied to the clipboard.">Copy key</button></div>
<dl class="facts">
<div><dt>License</dt><dd>${licenseTypeLabel(l.type)}</dd></div>
<div><dt>${l.type === 'timed' ? 'Valid until' : 'Expires'}</dt><dd>${l.expiresAt === null ? 'Never' : formatDate(l.expiresAt)}</dd></div>
<div><dt>Devices</dt><dd>${l.deviceCount} in use · ${devicesLabel(l.maxDevices).toLowerCase()}</dd></div>
</dl>
<h3>Devices</h3>
${l.deviceCount === 0 ? html`<p class="hint">No device is using this license yet.</p>` : deviceList(l.devices, canReset(l) ? { license: l, csrf } : undefined)}
${
  l.deviceCount > l.devices.length &&
  html`<p class="hint">Showing the first ${l.devices.length} of ${l.deviceCount} devices. <a href="${devicesHref(l.key, 1)}">See all devices</a></p>`
}
${resetControls(l, csrf)}
${l.purchaseNote && html`<p class="note">${l.purchaseNote}</p>`}
${
  offers.length > 0 &&
  html`<h3>${offers.some((o) => o.kind === 'renewal') ? 'Renew or upgrade' : 'Upgrade'}</h3>${offers.map(
    (o) =>
      html`<form method="post" action="/portal/licenses/offer" class="inline"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${l.key}"><input type="hidden" name="offerId" value="${o.id}"><button type="submit">${o.name}</button></form>`,
  )}`
}
<div class="card-foot">
<p class="support">Need help? <a href="mailto:${l.supportEmail}">${l.supportEmail}</a></p>
${purchaseId && html`<a class="button secondary" href="/portal/invoices/${encodeURIComponent(purchaseId)}">Download invoice</a>`}
${
  subscribed &&
  html`<form method="post" action="/portal/licenses/subscription" class="inline"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${l.key}"><button type="submit" class="secondary">Manage subscription</button></form>`
}
${l.action && html`<a class="button" href="${l.action.url}" rel="noopener noreferrer">${l.action.text}</a>`}
</div>
</article>`;
}

/**
 * The signed-in portal. `brand`: the one vendor the page speaks for (its header); `vendors`: when the
 * licenses are several vendors', each card says whose it is instead (docs/branding.md).
 */
export function portalPage(d: {
  email: string;
  licenses: PortalLicense[];
  invoices?: Map<string, string>;
  subscriptions?: Set<string>;
  offers?: Map<string, PortalOffer[]>;
  csrf: string;
  notice?: Notice;
  expiresAt: number;
  brand?: PageBrand;
  vendors?: Map<string, PageBrand>;
}): string {
  const who = html`<span class="who">Signed in as <strong>${d.email}</strong></span>
<form method="post" action="/portal/logout"><input type="hidden" name="csrf" value="${d.csrf}"><button type="submit" class="link">Sign out</button></form>`;
  const count = d.licenses.length;
  return layout(
    'Your licenses',
    html`<h1>Your licenses</h1>
<p class="lead">${count === 0 ? 'No licenses' : count === 1 ? 'One license' : `${count} licenses`} linked to ${d.email}. This page stays open until ${formatDate(d.expiresAt)}.</p>
${notice(d.notice)}
<p id="copy-status" class="hint" role="status" aria-live="polite"></p>
${count === 0 ? html`<div class="panel empty"><p>There are no licenses to show for this address.</p><p class="hint">If you bought with another address, <a href="/portal/request">ask for a link for that one</a>.</p></div>` : d.licenses.map((l) => licenseCard(l, d.csrf, d.invoices?.get(l.key), d.subscriptions?.has(l.key) ?? false, d.offers?.get(l.key) ?? [], d.vendors?.get(l.accountId)))}`,
    { who, brand: d.brand },
  );
}

import { html, SafeHtml } from '../../http/html.ts';
import type { MailBrand } from './brand.ts';
import { devicesLabel, formatDate, licenseTypeLabel } from './format.ts';
import type { RenderedMail } from './types.ts';

export interface PurchaseMailData {
  licenseKey: string;
  productName: string;
  productDescription: string;
  type: 'perpetual' | 'timed';
  expiresAt: number | null;
  maxDevices: number;
  supportEmail: string;
  purchaseNote: string | null;
  action: { text: string; url: string } | null;
  imageUrl: string | null;
  portalUrl: string;
}

export interface PortalLinkMailData {
  url: string;
  validForHours: number;
}

// E-mail clients ignore <style> blocks unevenly: every style is inline, the layout is a table.
const FONT = "font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif";
const BUTTON = `display:inline-block;background:#1d4ed8;color:#ffffff;text-decoration:none;font-weight:600;padding:12px 22px;border-radius:6px;${FONT}`;

/**
 * Where a vendor's brand goes in every e-mail the layout frames: filled in by `brandMail` when the
 * e-mail is queued for an account (MailQueue.queueFor), emptied otherwise. So a new e-mail kind is
 * branded by being framed here and queued for its account, with nothing of its own to do.
 */
export const BRAND_HEADER = '<!--tessera:brand-header-->';
export const BRAND_SIGNATURE = '<!--tessera:brand-signature-->';

export function layout(title: string, preheader: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title></head>
<body style="margin:0;padding:0;background:#f3f4f6;">
<div style="display:none;max-height:0;overflow:hidden;">${preheader}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f3f4f6;padding:24px 12px;">
<tr><td align="center">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="max-width:560px;background:#ffffff;border-radius:10px;border:1px solid #e5e7eb;">
${new SafeHtml(BRAND_HEADER)}<tr><td style="padding:28px 28px 8px 28px;color:#111827;font-size:16px;line-height:1.55;${FONT}">
${body}
${new SafeHtml(BRAND_SIGNATURE)}</td></tr>
</table>
</td></tr>
</table>
</body>
</html>`.value;
}

/** A rendered e-mail with `brand` in its header and signature (html and text); the neutral brand leaves no trace. */
export function brandMail<M extends RenderedMail>(mail: M, brand: MailBrand): M {
  // Checked when stored; checked again here, where it meets a style attribute.
  const accent = brand.accent && /^#[0-9a-f]{6}$/.test(brand.accent) ? brand.accent : null;
  const header =
    brand.name || brand.logoUrl
      ? html`<tr><td style="padding:20px 28px 0 28px;${accent ? `border-top:6px solid ${accent};border-radius:10px 10px 0 0;` : ''}${FONT}">${
          brand.logoUrl ? html`<img src="${brand.logoUrl}" alt="${brand.name ?? 'Logo'}" height="40" style="height:40px;width:auto;border:0;vertical-align:middle;">` : ''
        }${brand.name ? html`<span style="font-size:18px;font-weight:700;color:#111827;vertical-align:middle;${brand.logoUrl ? 'margin-left:10px;' : ''}">${brand.name}</span>` : ''}</td></tr>`.value
      : '';
  const signature = brand.name ? html`<p style="margin:0 0 24px 0;color:#374151;">— ${brand.name}</p>`.value : '';
  return {
    ...mail,
    html: mail.html.replace(BRAND_HEADER, () => header).replace(BRAND_SIGNATURE, () => signature),
    text: brand.name ? `${brand.name}\n\n${mail.text.replace(/\n*$/, '')}\n\n-- \n${brand.name}\n` : mail.text,
  };
}

export const button = (text: string, url: string) =>
  html`<p style="margin:24px 0;"><a href="${url}" style="${BUTTON}">${text}</a></p>`;

export function purchaseMail(d: PurchaseMailData): RenderedMail {
  const expiry = d.type === 'timed' && d.expiresAt !== null ? formatDate(d.expiresAt) : null;
  const row = (label: string, value: string) =>
    html`<tr><td style="padding:6px 12px 6px 0;color:#4b5563;white-space:nowrap;vertical-align:top;">${label}</td><td style="padding:6px 0;color:#111827;">${value}</td></tr>`;
  const body = html`
${d.imageUrl && html`<p style="margin:0 0 20px 0;text-align:center;"><img src="${d.imageUrl}" alt="${d.productName}" width="504" style="max-width:100%;height:auto;border:0;border-radius:6px;"></p>`}
<h1 style="margin:0 0 8px 0;font-size:22px;line-height:1.3;">Your license for ${d.productName}</h1>
<p style="margin:0 0 20px 0;color:#374151;">Thank you for your purchase. Here is your license key:</p>
<p style="margin:0 0 20px 0;padding:14px 16px;background:#f3f4f6;border-radius:6px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:18px;letter-spacing:1px;text-align:center;color:#111827;word-break:break-all;">${d.licenseKey}</p>
<table role="presentation" cellpadding="0" cellspacing="0" style="font-size:15px;margin:0 0 16px 0;">
${row('Product', d.productName)}
${row('License', licenseTypeLabel(d.type))}
${expiry && row('Valid until', expiry)}
${row('Devices', devicesLabel(d.maxDevices))}
</table>
${d.productDescription && html`<p style="margin:0 0 16px 0;color:#374151;white-space:pre-line;">${d.productDescription}</p>`}
${d.purchaseNote && html`<div style="margin:0 0 16px 0;padding:12px 16px;border-left:4px solid #1d4ed8;background:#eff6ff;color:#1f2937;white-space:pre-line;">${d.purchaseNote}</div>`}
${d.action && button(d.action.text, d.action.url)}
<p style="margin:20px 0 0 0;font-size:14px;color:#4b5563;">Manage your licenses and devices in the <a href="${d.portalUrl}" style="color:#1d4ed8;">license portal</a>.</p>
<p style="margin:8px 0 24px 0;font-size:14px;color:#4b5563;">Questions? Write to <a href="mailto:${d.supportEmail}" style="color:#1d4ed8;">${d.supportEmail}</a>.</p>`;

  const text = [
    `Your license for ${d.productName}`,
    '',
    'Thank you for your purchase. Here is your license key:',
    '',
    `    ${d.licenseKey}`,
    '',
    `Product: ${d.productName}`,
    `License: ${licenseTypeLabel(d.type)}`,
    ...(expiry ? [`Valid until: ${expiry}`] : []),
    `Devices: ${devicesLabel(d.maxDevices)}`,
    ...(d.productDescription ? ['', d.productDescription] : []),
    ...(d.purchaseNote ? ['', d.purchaseNote] : []),
    ...(d.action ? ['', `${d.action.text}: ${d.action.url}`] : []),
    '',
    `Manage your licenses and devices: ${d.portalUrl}`,
    `Questions? Write to ${d.supportEmail}.`,
    '',
  ].join('\n');

  return { subject: `Your license key for ${d.productName}`, text, html: layout(`Your license for ${d.productName}`, `Your license key: ${d.licenseKey}`, body) };
}

export function portalLinkMail(d: PortalLinkMailData): RenderedMail {
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">Your license portal link</h1>
<p style="margin:0 0 8px 0;color:#374151;">Open the portal to see your license keys, their devices and how to get help.</p>
${button('Open the license portal', d.url)}
<p style="margin:0 0 8px 0;font-size:14px;color:#4b5563;">The link works for ${d.validForHours} hours. If the button does not work, copy this address into your browser:</p>
<p style="margin:0 0 16px 0;font-size:13px;color:#4b5563;word-break:break-all;">${d.url}</p>
<p style="margin:0 0 24px 0;font-size:14px;color:#4b5563;">If you did not ask for this link, you can ignore this e-mail: nothing happens without it.</p>`;
  const text = [
    'Your license portal link',
    '',
    'Open the portal to see your license keys, their devices and how to get help:',
    '',
    d.url,
    '',
    `The link works for ${d.validForHours} hours.`,
    'If you did not ask for this link, you can ignore this e-mail: nothing happens without it.',
    '',
  ].join('\n');
  return { subject: 'Your license portal link', text, html: layout('Your license portal link', 'Open your license portal', body) };
}

export interface WebhookDisabledMailData {
  url: string;
  endpointId: string;
}

/** To the operator: an endpoint failed for a day and was disabled (PATCH it with enabled: true to resume). */
export function webhookDisabledMail(d: WebhookDisabledMailData): RenderedMail {
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">A webhook endpoint was disabled</h1>
<p style="margin:0 0 8px 0;color:#374151;">Every delivery to this endpoint has failed for more than 24 hours, so Tessera stopped sending to it:</p>
<p style="margin:0 0 16px 0;font-size:14px;font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;">${d.url} (${d.endpointId})</p>
<p style="margin:0 0 24px 0;font-size:14px;color:#4b5563;">The failed deliveries and each attempt's answer are listed by <code>GET /api/v1/webhooks/${d.endpointId}/deliveries</code>. Once the receiver works again, enable the endpoint with <code>PATCH /api/v1/webhooks/${d.endpointId}</code> <code>{"enabled": true}</code> and redeliver what it missed.</p>`;
  const text = [
    'A webhook endpoint was disabled',
    '',
    `Every delivery to this endpoint has failed for more than 24 hours, so Tessera stopped sending to it:`,
    `${d.url} (${d.endpointId})`,
    '',
    `The failed deliveries and each attempt's answer: GET /api/v1/webhooks/${d.endpointId}/deliveries`,
    `Once the receiver works again: PATCH /api/v1/webhooks/${d.endpointId} {"enabled": true}, then redeliver what it missed.`,
    '',
  ].join('\n');
  return { subject: 'A webhook endpoint was disabled', text, html: layout('A webhook endpoint was disabled', `${d.url} failed for a day`, body) };
}

export interface PasswordResetMailData {
  url: string;
  validForMinutes: number;
}

export function passwordResetMail(d: PasswordResetMailData): RenderedMail {
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">Reset your dashboard password</h1>
<p style="margin:0 0 8px 0;color:#374151;">Someone asked to reset the password of the Tessera dashboard account for this address.</p>
${button('Choose a new password', d.url)}
<p style="margin:0 0 8px 0;font-size:14px;color:#4b5563;">The link works once, for ${d.validForMinutes} minutes. If the button does not work, copy this address into your browser:</p>
<p style="margin:0 0 16px 0;font-size:13px;color:#4b5563;word-break:break-all;">${d.url}</p>
<p style="margin:0 0 24px 0;font-size:14px;color:#4b5563;">If you did not ask for this, ignore this e-mail: your password stays as it is.</p>`;
  const text = [
    'Reset your dashboard password',
    '',
    'Someone asked to reset the password of the Tessera dashboard account for this address. Choose a new one here:',
    '',
    d.url,
    '',
    `The link works once, for ${d.validForMinutes} minutes.`,
    'If you did not ask for this, ignore this e-mail: your password stays as it is.',
    '',
  ].join('\n');
  return { subject: 'Reset your dashboard password', text, html: layout('Reset your dashboard password', 'Choose a new password', body) };
}

export interface EmailChangeMailData {
  url: string;
  newEmail: string;
  validForMinutes: number;
}

/** To the new address: the link that confirms it (the change waits for it). */
export function emailChangeMail(d: EmailChangeMailData): RenderedMail {
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">Confirm your new e-mail address</h1>
<p style="margin:0 0 8px 0;color:#374151;">Someone signed in to a Tessera dashboard account asked to make ${d.newEmail} its e-mail address.</p>
${button('Confirm this address', d.url)}
<p style="margin:0 0 8px 0;font-size:14px;color:#4b5563;">The link works once, for ${d.validForMinutes} minutes. If the button does not work, copy this address into your browser:</p>
<p style="margin:0 0 16px 0;font-size:13px;color:#4b5563;word-break:break-all;">${d.url}</p>
<p style="margin:0 0 24px 0;font-size:14px;color:#4b5563;">If you did not ask for this, ignore this e-mail: nothing changes.</p>`;
  const text = [
    'Confirm your new e-mail address',
    '',
    `Someone signed in to a Tessera dashboard account asked to make ${d.newEmail} its e-mail address. Confirm it here:`,
    '',
    d.url,
    '',
    `The link works once, for ${d.validForMinutes} minutes.`,
    'If you did not ask for this, ignore this e-mail: nothing changes.',
    '',
  ].join('\n');
  return { subject: 'Confirm your new e-mail address', text, html: layout('Confirm your new e-mail address', 'One click to confirm', body) };
}

export interface EmailChangedMailData {
  newEmail: string;
  dashboardUrl: string;
}

/** To the old address, once the change is made: the owner learns of it if it was not them. */
export function emailChangedMail(d: EmailChangedMailData): RenderedMail {
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">Your dashboard e-mail address changed</h1>
<p style="margin:0 0 8px 0;color:#374151;">The Tessera dashboard account of this address now signs in as ${d.newEmail}. E-mails about the account go there from now on.</p>
<p style="margin:0 0 24px 0;font-size:14px;color:#4b5563;">If you did not make this change, tell the person who runs this Tessera server (${d.dashboardUrl}): they can set the address back from its command line.</p>`;
  const text = [
    'Your dashboard e-mail address changed',
    '',
    `The Tessera dashboard account of this address now signs in as ${d.newEmail}. E-mails about the account go there from now on.`,
    '',
    `If you did not make this change, tell the person who runs this Tessera server (${d.dashboardUrl}): they can set the address back from its command line.`,
    '',
  ].join('\n');
  return { subject: 'Your dashboard e-mail address changed', text, html: layout('Your dashboard e-mail address changed', `Now ${d.newEmail}`, body) };
}

export interface MemberInvitationMailData {
  url: string;
  /** Who invited (their sign-in address). */
  inviter: string;
  role: string;
  validForDays: number;
}

/** To an invited address: the single-use link where the invitee chooses a password and joins. */
export function memberInvitationMail(d: MemberInvitationMailData): RenderedMail {
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">You are invited to a Tessera dashboard</h1>
<p style="margin:0 0 8px 0;color:#374151;">${d.inviter} invited you to their licensing dashboard as ${d.role}.</p>
${button('Accept the invitation', d.url)}
<p style="margin:0 0 8px 0;font-size:14px;color:#4b5563;">The link works once, for ${d.validForDays} days. If the button does not work, copy this address into your browser:</p>
<p style="margin:0 0 16px 0;font-size:13px;color:#4b5563;word-break:break-all;">${d.url}</p>
<p style="margin:0 0 24px 0;font-size:14px;color:#4b5563;">If you did not expect this, ignore this e-mail: nothing happens.</p>`;
  const text = [
    'You are invited to a Tessera dashboard',
    '',
    `${d.inviter} invited you to their licensing dashboard as ${d.role}. Accept here (you choose your password there):`,
    '',
    d.url,
    '',
    `The link works once, for ${d.validForDays} days.`,
    'If you did not expect this, ignore this e-mail: nothing happens.',
    '',
  ].join('\n');
  return { subject: 'You are invited to a Tessera dashboard', text, html: layout('You are invited to a Tessera dashboard', `Join as ${d.role}`, body) };
}

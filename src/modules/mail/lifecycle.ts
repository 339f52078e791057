import { notFound } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import { html } from '../../http/html.ts';
import type { AccountService } from '../accounts/service.ts';
import type { ProductService } from '../products/service.ts';
import { formatDate } from './format.ts';
import type { MailQueue } from './queue.ts';
import { button, layout } from './templates.ts';
import type { RenderedMail } from './types.ts';

export interface PaymentFailedMailData {
  products: string[];
  licenseKeys: string[];
  /** The provider's page for the failed invoice, when there is one. */
  payUrl: string | null;
  /** The license portal, where "Manage subscription" opens the provider's billing portal. */
  portalUrl: string;
  supportEmail: string;
}

export function paymentFailedMail(d: PaymentFailedMailData): RenderedMail {
  const names = d.products.join(', ');
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">Your payment for ${names} did not go through</h1>
<p style="margin:0 0 8px 0;color:#374151;">We could not take the renewal payment of your subscription. Your license keeps working for a few days; please pay the invoice or update your payment method before then.</p>
${d.payUrl && button('Pay the invoice', d.payUrl)}
<p style="margin:16px 0 8px 0;color:#374151;">To change your card or other payment details, open the license portal and choose "Manage subscription":</p>
${button('Manage subscription', d.portalUrl)}
<p style="margin:0 0 8px 0;font-size:14px;color:#4b5563;">License: ${d.licenseKeys.join(', ')}</p>
<p style="margin:8px 0 24px 0;font-size:14px;color:#4b5563;">Questions? Write to <a href="mailto:${d.supportEmail}" style="color:#1d4ed8;">${d.supportEmail}</a>.</p>`;
  const text = [
    `Your payment for ${names} did not go through`,
    '',
    'We could not take the renewal payment of your subscription. Your license keeps working for a few days; please pay the invoice or update your payment method before then.',
    '',
    ...(d.payUrl ? [`Pay the invoice: ${d.payUrl}`, ''] : []),
    `Manage your subscription (license portal, "Manage subscription"): ${d.portalUrl}`,
    '',
    `License: ${d.licenseKeys.join(', ')}`,
    `Questions? Write to ${d.supportEmail}.`,
    '',
  ].join('\n');
  return { subject: `Payment failed: your subscription to ${names}`, text, html: layout('Your payment did not go through', 'Please update your payment method', body) };
}

export interface LicenseExtendedMailData {
  kind: 'renewal' | 'upgrade';
  productName: string;
  licenseKey: string;
  expiresAt: number | null;
  maxDevices: number;
  portalUrl: string;
  supportEmail: string;
}

export function licenseExtendedMail(d: LicenseExtendedMailData): RenderedMail {
  const verb = d.kind === 'renewal' ? 'renewed' : 'upgraded';
  const until = d.expiresAt === null ? 'It does not expire.' : `It is valid until ${formatDate(d.expiresAt)}.`;
  const body = html`
<h1 style="margin:0 0 12px 0;font-size:22px;line-height:1.3;">Your license for ${d.productName} was ${verb}</h1>
<p style="margin:0 0 8px 0;color:#374151;">Thank you for your purchase. Your license key stays the same, and so do your devices:</p>
<p style="margin:0 0 16px 0;padding:14px 16px;background:#f3f4f6;border-radius:6px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:18px;text-align:center;word-break:break-all;">${d.licenseKey}</p>
<p style="margin:0 0 8px 0;color:#374151;">${until} Devices: ${String(d.maxDevices)}.</p>
<p style="margin:20px 0 0 0;font-size:14px;color:#4b5563;">Manage your licenses and devices in the <a href="${d.portalUrl}" style="color:#1d4ed8;">license portal</a>.</p>
<p style="margin:8px 0 24px 0;font-size:14px;color:#4b5563;">Questions? Write to <a href="mailto:${d.supportEmail}" style="color:#1d4ed8;">${d.supportEmail}</a>.</p>`;
  const text = [
    `Your license for ${d.productName} was ${verb}`,
    '',
    'Thank you for your purchase. Your license key stays the same, and so do your devices:',
    '',
    `    ${d.licenseKey}`,
    '',
    `${until} Devices: ${d.maxDevices}.`,
    '',
    `Manage your licenses and devices: ${d.portalUrl}`,
    `Questions? Write to ${d.supportEmail}.`,
    '',
  ].join('\n');
  return { subject: `Your license for ${d.productName} was ${verb}`, text, html: layout(`Your license was ${verb}`, `${d.productName}: ${verb}`, body) };
}

/** What the lifecycle e-mails need of a license (a LicenseRecord fits). */
interface MailedLicense {
  key: string;
  accountId: string;
  productId: string;
  expiresAt: number | null;
  maxDevices: number;
}

/**
 * E-mails about a license's later life (a failed subscription payment; a renewal or upgrade bought),
 * rendered and queued in the caller's unit like the purchase e-mail.
 */
export class LifecycleMailer {
  constructor(
    private readonly mail: MailQueue,
    private readonly products: ProductService,
    private readonly accounts: AccountService,
    private readonly baseUrl: string,
  ) {}

  private portalUrl(to: string): string {
    return `${this.baseUrl}/portal/request?email=${encodeURIComponent(to)}`;
  }

  private async supportEmail(principal: Principal, productId: string, unit: Unit): Promise<{ name: string; support: string }> {
    const product = await this.products.get(principal, productId, unit);
    const owner = await this.accounts.findById(principal.accountId, unit);
    if (!owner) throw notFound('Account');
    return { name: product.name, support: product.supportEmail ?? owner.email };
  }

  async queue(principal: Principal, unit: Unit, m: { to: string; licenses: MailedLicense[]; payUrl: string | null }): Promise<void> {
    const first = await this.supportEmail(principal, m.licenses[0]!.productId, unit);
    const names = new Set([first.name]);
    for (const l of m.licenses.slice(1)) names.add((await this.supportEmail(principal, l.productId, unit)).name);
    const rendered = paymentFailedMail({ products: [...names], licenseKeys: m.licenses.map((l) => l.key), payUrl: m.payUrl, portalUrl: this.portalUrl(m.to), supportEmail: first.support });
    await this.mail.queueFor(unit, principal.accountId, { kind: 'payment_failed', to: m.to, replyTo: first.support, ...rendered });
  }

  async extended(principal: Principal, unit: Unit, m: { to: string; kind: 'renewal' | 'upgrade'; license: MailedLicense }): Promise<void> {
    const { name, support } = await this.supportEmail(principal, m.license.productId, unit);
    const rendered = licenseExtendedMail({ kind: m.kind, productName: name, licenseKey: m.license.key, expiresAt: m.license.expiresAt, maxDevices: m.license.maxDevices, portalUrl: this.portalUrl(m.to), supportEmail: support });
    await this.mail.queueFor(unit, principal.accountId, { kind: `license_${m.kind}`, to: m.to, replyTo: support, ...rendered });
  }
}

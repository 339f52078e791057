import { renderActionUrl } from '../../core/action-url.ts';
import { invalidRequest, notFound } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { AccountService } from '../accounts/service.ts';
import type { ProductService } from '../products/service.ts';
import type { MailQueue } from './queue.ts';
import { purchaseMail } from './templates.ts';

/** What the purchase e-mail needs of a license (a LicenseRecord fits). */
export interface PurchasedLicense {
  key: string;
  accountId: string;
  productId: string;
  type: 'perpetual' | 'timed';
  expiresAt: number | null;
  maxDevices: number;
  email: string | null;
}

/**
 * The purchase e-mail: license key, product details and customization (support e-mail or the
 * owner's account e-mail, purchase note, action button, image on the plus plan). Rendered and
 * queued in the caller's unit of work, so the e-mail exists exactly when the license does.
 */
export class PurchaseMailer {
  constructor(
    private readonly mail: MailQueue,
    private readonly products: ProductService,
    private readonly accounts: AccountService,
    private readonly baseUrl: string,
  ) {}

  async queue(principal: Principal, license: PurchasedLicense, unit: Unit): Promise<void> {
    if (!license.email) throw invalidRequest('email', 'the license has no e-mail address to send to');
    const to = license.email;
    const product = await this.products.get(principal, license.productId, unit);
    const owner = await this.accounts.findById(license.accountId, unit);
    if (!owner) throw notFound('Account');
    const action =
      product.actionButtonText && product.actionButtonUrl
        ? { text: product.actionButtonText, url: renderActionUrl(product.actionButtonUrl, license.key) }
        : null;
    const supportEmail = product.supportEmail ?? owner.email;
    const rendered = purchaseMail({
      licenseKey: license.key,
      productName: product.name,
      productDescription: product.description,
      type: license.type,
      expiresAt: license.expiresAt,
      maxDevices: license.maxDevices,
      supportEmail,
      purchaseNote: product.purchaseNote,
      action,
      // The image is a plus-plan feature: it shows only while the owner is on that plan.
      imageUrl: product.hasImage && owner.plan === 'plus' ? productImageUrl(this.baseUrl, product.id) : null,
      portalUrl: `${this.baseUrl}/portal/request?email=${encodeURIComponent(to)}`,
    });
    // Replies reach whoever answers for the product, not the no-reply sender.
    await this.mail.queueFor(unit, license.accountId, { kind: 'purchase', to, replyTo: supportEmail, ...rendered });
  }
}

/** The stable public address of a product's image (used in e-mails; cached by clients). */
export const productImageUrl = (baseUrl: string, productId: string): string =>
  `${baseUrl}/api/v1/public/products/${encodeURIComponent(productId)}/image`;

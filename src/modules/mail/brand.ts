import type { Unit } from '../../core/unit-of-work.ts';
import { brandLogoPath, type Branding } from '../branding/service.ts';

/**
 * How a vendor's e-mail to its customers looks: the sender's display name, the header (logo, name,
 * accent) and the signature. `NEUTRAL` is the installation's own look (operators' e-mails, and a
 * customer e-mail that speaks for several vendors at once).
 */
export interface MailBrand {
  /** The sender's display name and the signature; null: MAIL_FROM's own name, no signature. */
  name: string | null;
  /** Absolute: mail clients fetch it from the server. */
  logoUrl: string | null;
  /** A checked `#rrggbb` (branding/service.ts), the only value put into a style attribute. */
  accent: string | null;
}

export const NEUTRAL: MailBrand = Object.freeze({ name: null, logoUrl: null, accent: null });

export const mailBrandOf = (b: Branding, baseUrl: string): MailBrand => {
  const logo = brandLogoPath(b);
  return { name: b.displayName, logoUrl: logo && `${baseUrl}${logo}`, accent: b.accentColor };
};

/** Looks an account's brand up (in the caller's unit when there is one). */
export type BrandLookup = (accountId: string, unit?: Unit) => Promise<MailBrand>;

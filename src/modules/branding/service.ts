import { AppError, invalidRequest } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import { checkedImage, type StoredImage } from '../product-images/image.ts';

/** decisions.md, "Operators: teams and security": PNG, JPEG or WebP, at most 256 KiB. */
export const LOGO_MAX_BYTES = 256 * 1024;
export const DISPLAY_NAME_MAX = 80;
/** `#rrggbb` only: the one shape that is safe to put in a stylesheet or an e-mail's style attribute as it is. */
const HEX_COLOUR = /^#[0-9a-f]{6}$/;

/** How an account shows itself to its customers (portal, e-mails); null fields: the installation's neutral look. */
export interface Branding {
  accountId: string;
  displayName: string | null;
  /** Lower-case `#rrggbb`. */
  accentColor: string | null;
  /** The logo's validator and time (its bytes are read only when served), or null. */
  logo: { etag: string; updatedAt: number } | null;
}

export interface BrandingRepository {
  find(accountId: string, unit?: Unit): Promise<Branding | undefined>;
  /** Creates or updates the account's row with the name and colour (the logo stays as it is). */
  save(unit: Unit, accountId: string, fields: { displayName: string | null; accentColor: string | null }, at: number): Promise<void>;
  putLogo(unit: Unit, accountId: string, image: StoredImage): Promise<void>;
  removeLogo(unit: Unit, accountId: string, at: number): Promise<void>;
  logo(accountId: string): Promise<StoredImage | undefined>;
}

export interface BrandingInput {
  displayName?: string;
  accentColor?: string;
  /** A new logo's bytes, when one was chosen. */
  logo?: Buffer;
}

const none = (accountId: string): Branding => ({ accountId, displayName: null, accentColor: null, logo: null });

/** A display name: trimmed, at most 80 characters, no control characters (it goes into a From header); empty clears it. */
export function checkDisplayName(raw: string | undefined): string | null {
  const name = (raw ?? '').trim();
  if (name === '') return null;
  if (name.length > DISPLAY_NAME_MAX) throw invalidRequest('displayName', `must be at most ${DISPLAY_NAME_MAX} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(name)) throw invalidRequest('displayName', 'must be one line of text');
  return name;
}

/** An accent colour: `#rrggbb` (any case, stored lower-case); empty clears it. Anything else is refused, never cleaned. */
export function checkAccentColor(raw: string | undefined): string | null {
  const colour = (raw ?? '').trim().toLowerCase();
  if (colour === '') return null;
  if (!HEX_COLOUR.test(colour)) throw invalidRequest('accentColor', 'must be a colour as #rrggbb, e.g. #1d4ed8');
  return colour;
}

/**
 * An account's branding. Every input is checked before anything is stored: a bad colour with a good
 * logo stores neither. Who may change it is decided before (core/access.ts, the `settings` area).
 */
export class BrandingService {
  constructor(
    private readonly repo: BrandingRepository,
    private readonly units: UnitRunner,
    private readonly clock: () => number = Date.now,
  ) {}

  async get(accountId: string, unit?: Unit): Promise<Branding> {
    return (await this.repo.find(accountId, unit)) ?? none(accountId);
  }

  async update(principal: Principal, input: BrandingInput): Promise<Branding> {
    const now = this.clock();
    // Every field is checked, and every wrong one named, before anything is stored.
    const issues: { path: string; message: string }[] = [];
    const check = <T>(path: string, f: () => T): T | undefined => {
      try {
        return f();
      } catch (error) {
        if (!(error instanceof AppError) || error.statusCode >= 500) throw error;
        issues.push(...(error.code === 'invalid_request' && error.issues?.length ? error.issues : [{ path, message: error.message }]));
        return undefined;
      }
    };
    const displayName = check('displayName', () => checkDisplayName(input.displayName)) ?? null;
    const accentColor = check('accentColor', () => checkAccentColor(input.accentColor)) ?? null;
    const logo = input.logo && input.logo.length > 0 ? check('logo', () => checkedImage(input.logo!, LOGO_MAX_BYTES, '256 KiB', now)) : undefined;
    if (issues.length > 0) throw new AppError('invalid_request', issues.map((i) => `${i.path} ${i.message}`).join('; '), issues);
    return this.units.run(async (unit) => {
      await this.repo.save(unit, principal.accountId, { displayName, accentColor }, now);
      if (logo) await this.repo.putLogo(unit, principal.accountId, logo);
      return this.get(principal.accountId, unit);
    });
  }

  async removeLogo(principal: Principal): Promise<void> {
    await this.units.run((unit) => this.repo.removeLogo(unit, principal.accountId, this.clock()));
  }

  logo(accountId: string): Promise<StoredImage | undefined> {
    return this.repo.logo(accountId);
  }
}

/** Where an account's logo and accent stylesheet are served (public: customers' browsers and mail clients fetch them). */
export const brandLogoPath = (b: Branding): string | null => (b.logo ? `/portal/assets/brand/${encodeURIComponent(b.accountId)}/logo?v=${b.logo.updatedAt}` : null);
export const brandStylesheetPath = (b: Branding): string | null =>
  b.accentColor ? `/portal/assets/brand/${encodeURIComponent(b.accountId)}/accent.css?v=${b.accentColor.slice(1)}` : null;

/** The portal's stylesheet of one account: its accent as the web kit's brand colours (a validated `#rrggbb`, nothing else, goes in). */
export function accentStylesheet(colour: string): string {
  if (!HEX_COLOUR.test(colour)) throw new Error('not a checked colour');
  return `:root { --brand: ${colour}; --brand-dark: ${colour}; }\n.topbar { border-top: 4px solid ${colour}; }\n`;
}

import { createHash, randomBytes } from 'node:crypto';
import { renderActionUrl } from '../../core/action-url.ts';
import { isValidEmail, normalizeEmail } from '../../core/email.ts';
import { invalidRequest } from '../../core/errors.ts';
import { normalizeLicenseKey } from '../../core/license-key.ts';
import { type LicenseStatus, licenseStatus } from '../../core/license-status.ts';
import type { Executor } from '../../storage/index.ts';
import type { Outbox } from '../mail/outbox.ts';
import { portalLinkMail } from '../mail/templates.ts';

const HOUR = 60 * 60_000;
export const LINK_VALIDITY_MS = 2 * HOUR;
export const PRIVATE_SESSION_VALIDITY_MS = 12 * HOUR;
export const LINK_REQUEST_WINDOW_MS = HOUR;

/** Whose licenses a session shows: an address, and for a private session one account's products only. */
export interface PortalScope {
  email: string;
  userId: string | null;
}

export interface TokenRecord extends PortalScope {
  tokenHash: string;
  /** `link`: what an e-mail or a private-session URL carries; `session`: what the cookie carries. */
  kind: 'link' | 'session';
  expiresAt: number;
  createdAt: number;
}

export interface LinkRequest {
  email: string;
  now: number;
  windowMs: number;
  maxPerWindow: number;
  link: TokenRecord;
  queueMail: (tx: Executor) => Promise<void>;
}

export interface PortalDevice {
  identifier: string;
  name: string;
  activationDate: number;
}

export interface PortalLicenseRow {
  key: string;
  type: 'perpetual' | 'timed';
  expiresAt: number | null;
  revoked: boolean;
  maxDevices: number;
  createdAt: number;
  productName: string;
  fallbackEnabled: boolean;
  allowDeviceReset: boolean;
  resetLimit: number;
  resetWindowMs: number;
  supportEmail: string;
  purchaseNote: string | null;
  actionButtonText: string | null;
  actionButtonUrl: string | null;
  devices: PortalDevice[];
  /** Portal resets inside the product's window, oldest first. */
  resets: number[];
}

export type ResetAttempt =
  | { outcome: 'done'; removed: number }
  | { outcome: 'nothing' }
  | { outcome: 'not_found' }
  | { outcome: 'forbidden' }
  | { outcome: 'limit'; nextAt: number };

export interface PortalRepository {
  /** Counts, records and (when the address has licenses) stores the link and queues its e-mail: one unit. */
  requestLink(request: LinkRequest): Promise<{ limitedUntil: number } | { queued: boolean }>;
  insertToken(token: TokenRecord): Promise<void>;
  findToken(tokenHash: string, kind: TokenRecord['kind'], now: number): Promise<TokenRecord | undefined>;
  deleteToken(tokenHash: string): Promise<void>;
  listLicenses(scope: PortalScope, now: number): Promise<PortalLicenseRow[]>;
  /** Checks the product's rule and the reset limit, then empties the devices: one atomic unit. */
  resetDevices(scope: PortalScope, key: string, now: number): Promise<ResetAttempt>;
}

export interface PortalLicense {
  key: string;
  productName: string;
  type: 'perpetual' | 'timed';
  status: LicenseStatus;
  expiresAt: number | null;
  maxDevices: number;
  devices: PortalDevice[];
  supportEmail: string;
  purchaseNote: string | null;
  action: { text: string; url: string } | null;
  reset: { allowed: false } | { allowed: true; remaining: number; nextAt: number | null; limit: number; windowDays: number };
}

export interface OpenedSession {
  sessionToken: string;
  expiresAt: number;
}

const newToken = (): string => randomBytes(32).toString('base64url');
/** Tokens are 256 random bits: a plain SHA-256 is enough to make a stolen table useless. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * The customer portal: access links by e-mail (2 hours), operator-created private sessions
 * (12 hours, one account's products), the license list and limited device resets.
 */
export class PortalService {
  constructor(
    private readonly repo: PortalRepository,
    private readonly outbox: Outbox,
    private readonly baseUrl: string,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Sends an access link when the address has portal licenses. The outcome the caller can see
   * is the same either way, except the per-address rate limit, which counts every request.
   */
  async requestLink(rawEmail: string, maxPerHour: number | null): Promise<{ limitedUntil: number } | { accepted: true }> {
    const email = normalizeEmail(rawEmail);
    if (!isValidEmail(email)) throw invalidRequest('email', 'must be a valid e-mail address');
    const now = this.clock();
    const token = newToken();
    const url = this.portalUrl(token);
    const mail = portalLinkMail({ url, validForHours: LINK_VALIDITY_MS / HOUR });
    const outcome = await this.repo.requestLink({
      email,
      now,
      windowMs: LINK_REQUEST_WINDOW_MS,
      maxPerWindow: maxPerHour ?? Number.MAX_SAFE_INTEGER,
      link: { tokenHash: hashToken(token), kind: 'link', email, userId: null, expiresAt: now + LINK_VALIDITY_MS, createdAt: now },
      queueMail: async (tx) => void (await this.outbox.enqueue(tx, { kind: 'portal_link', to: rawEmail.trim(), replyTo: null, ...mail })),
    });
    return 'limitedUntil' in outcome ? outcome : { accepted: true };
  }

  /** Server API: a link for `email` showing only `userId`'s products, valid 12 hours. */
  async createPrivateSession(userId: string, rawEmail: string): Promise<{ url: string; expiresAt: number }> {
    const email = normalizeEmail(rawEmail);
    if (!isValidEmail(email)) throw invalidRequest('email', 'must be a valid e-mail address');
    const now = this.clock();
    const token = newToken();
    const expiresAt = now + PRIVATE_SESSION_VALIDITY_MS;
    await this.repo.insertToken({ tokenHash: hashToken(token), kind: 'link', email, userId, expiresAt, createdAt: now });
    return { url: this.portalUrl(token), expiresAt };
  }

  /**
   * Trades a link token for a session token (the cookie) with the same scope and end. The link
   * keeps working until it expires: mail scanners open links before people do.
   */
  async openLink(linkToken: string): Promise<OpenedSession | undefined> {
    const now = this.clock();
    const link = await this.repo.findToken(hashToken(linkToken), 'link', now);
    if (!link) return undefined;
    const sessionToken = newToken();
    await this.repo.insertToken({ ...link, tokenHash: hashToken(sessionToken), kind: 'session', createdAt: now });
    return { sessionToken, expiresAt: link.expiresAt };
  }

  session(sessionToken: string): Promise<TokenRecord | undefined> {
    return this.repo.findToken(hashToken(sessionToken), 'session', this.clock());
  }

  endSession(sessionToken: string): Promise<void> {
    return this.repo.deleteToken(hashToken(sessionToken));
  }

  async licenses(scope: PortalScope): Promise<PortalLicense[]> {
    const now = this.clock();
    return (await this.repo.listLicenses(scope, now)).map((r) => ({
      key: r.key,
      productName: r.productName,
      type: r.type,
      status: licenseStatus(r, r.fallbackEnabled, now),
      expiresAt: r.expiresAt,
      maxDevices: r.maxDevices,
      devices: r.devices,
      supportEmail: r.supportEmail,
      purchaseNote: r.purchaseNote,
      action: r.actionButtonText && r.actionButtonUrl ? { text: r.actionButtonText, url: renderActionUrl(r.actionButtonUrl, r.key) } : null,
      reset: r.allowDeviceReset
        ? {
            allowed: true,
            remaining: Math.max(0, r.resetLimit - r.resets.length),
            nextAt: r.resets.length >= r.resetLimit ? r.resets[r.resets.length - r.resetLimit]! + r.resetWindowMs : null,
            limit: r.resetLimit,
            windowDays: Math.round(r.resetWindowMs / (24 * HOUR)),
          }
        : { allowed: false },
    }));
  }

  resetDevices(scope: PortalScope, rawKey: string): Promise<ResetAttempt> {
    return this.repo.resetDevices(scope, normalizeLicenseKey(rawKey), this.clock());
  }

  private portalUrl(token: string): string {
    return `${this.baseUrl}/portal?token=${token}`;
  }
}

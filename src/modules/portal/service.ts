import { createHash, randomBytes } from 'node:crypto';
import { renderActionUrl } from '../../core/action-url.ts';
import { canonicalEmail } from '../../core/email.ts';
import { invalidRequest } from '../../core/errors.ts';
import { normalizeLicenseKey } from '../../core/license-key.ts';
import { type LicenseStatus, licenseStatus } from '../../core/license-status.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { LicenseService } from '../licenses/service.ts';
import type { MailQueue } from '../mail/queue.ts';
import { portalLinkMail } from '../mail/templates.ts';

const HOUR = 60 * 60_000;
export const LINK_VALIDITY_MS = 2 * HOUR;
export const PRIVATE_SESSION_VALIDITY_MS = 12 * HOUR;
export const LINK_REQUEST_WINDOW_MS = HOUR;

/** Whose licenses a session shows: an address, and for a private session one account's products only. */
export interface PortalScope {
  email: string;
  accountId: string | null;
}

export interface TokenRecord extends PortalScope {
  tokenHash: string;
  /** `link`: what an e-mail or a private-session URL carries; `session`: what the cookie carries. */
  kind: 'link' | 'session';
  expiresAt: number;
  createdAt: number;
  /** For a session: the link it was opened from (signing out ends both). */
  linkHash: string | null;
}

export interface PortalDevice {
  identifier: string;
  name: string;
  activationDate: number;
}

export interface PortalLicenseRow {
  key: string;
  /** The vendor's account (its branding heads the license). */
  accountId: string;
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
  /** The first devices (oldest first), at most DEVICES_PREVIEW: a license may have thousands. */
  devices: PortalDevice[];
  deviceCount: number;
  /** Portal resets inside the product's window, oldest first. */
  resets: number[];
}

export type ResetAttempt =
  | { outcome: 'done'; removed: number }
  | { outcome: 'nothing' }
  | { outcome: 'not_found' }
  | { outcome: 'forbidden' }
  | { outcome: 'limit'; nextAt: number; limit: number };

/** The reset rule of a license's product, read with the license locked. */
export interface ResetRule {
  allowDeviceReset: boolean;
  resetLimit: number;
  resetWindowMs: number;
}

/** A link request as counted by the limits: when, and from which client. */
export interface LinkRequest {
  at: number;
  client: string | null;
}

/**
 * Link-request limits. `perClient` counts the requests for one address from one client: a third
 * party spends its own quota, never the owner's. `perAddress` counts every client's and is set
 * high: it only stops many clients together from flooding one mailbox.
 */
export interface LinkLimits {
  perClient: number;
  perAddress: number;
}

export type LinkRequestOutcome = { accepted: true } | { limitedUntil: number; by: 'client' | 'address'; limit: number };

export interface PortalRepository {
  /** Link requests for `email` after `since`, oldest first, locked against concurrent requests for it. */
  recentLinkRequests(unit: Unit, email: string, since: number): Promise<LinkRequest[]>;
  /** Records a link request; drops requests up to `forgetBefore` and tokens long expired (housekeeping). */
  recordLinkRequest(unit: Unit, email: string, client: string, now: number, forgetBefore: number): Promise<void>;
  /** Whether the address has a license on a product shown in the portal. */
  /** The accounts with licenses of `email` shown in the portal: none, one, or two (two or more: several vendors). */
  vendorsOf(unit: Unit, email: string): Promise<string[]>;
  insertToken(unit: Unit, token: TokenRecord): Promise<void>;
  findToken(tokenHash: string, kind: TokenRecord['kind'], now: number): Promise<TokenRecord | undefined>;
  /** Deletes the session, and when it came from a link, the link and every session opened from it. */
  endSession(unit: Unit, session: TokenRecord): Promise<void>;
  listLicenses(scope: PortalScope, now: number): Promise<PortalLicenseRow[]>;
  /** One page of a visible license's devices, oldest first, with the total; undefined when not in `scope`. */
  devicePage(scope: PortalScope, key: string, offset: number, limit: number): Promise<DevicePage | undefined>;
  /** The license in `scope` with its product's reset rule, locked until `unit` ends. */
  lockVisible(unit: Unit, scope: PortalScope, key: string): Promise<ResetRule | undefined>;
  /** Portal resets of the license after `since`, oldest first. */
  resetsSince(unit: Unit, key: string, since: number): Promise<number[]>;
  /** Records a reset; drops those up to `forgetBefore`. */
  recordReset(unit: Unit, key: string, now: number, forgetBefore: number): Promise<void>;
}

/** Devices a license card shows; the rest are a click away, a page at a time. */
export const DEVICES_PREVIEW = 20;
export const DEVICES_PER_PAGE = 50;

export interface DevicePage {
  key: string;
  productName: string;
  maxDevices: number;
  total: number;
  devices: PortalDevice[];
}

/** How many portal resets are left in the window, and when the next one frees up: the one quota rule. */
export function resetQuota(resets: readonly number[], limit: number, windowMs: number): { remaining: number; nextAt: number | null } {
  const used = resets.length;
  return { remaining: Math.max(0, limit - used), nextAt: used >= limit ? resets[used - limit]! + windowMs : null };
}

export interface PortalLicense {
  key: string;
  accountId: string;
  productName: string;
  type: 'perpetual' | 'timed';
  status: LicenseStatus;
  expiresAt: number | null;
  maxDevices: number;
  devices: PortalDevice[];
  deviceCount: number;
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
    private readonly units: UnitRunner,
    private readonly mail: MailQueue,
    private readonly licenseService: LicenseService,
    private readonly baseUrl: string,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Sends an access link when the address has portal licenses. The outcome the caller can see
   * is the same either way, except the limits (`null`: none), which count requests whether or not
   * the address has licenses. The link goes to the normalized address, the one that was checked.
   */
  async requestLink(rawEmail: string, client: string, limits: LinkLimits | null): Promise<LinkRequestOutcome> {
    const email = canonicalEmail(rawEmail);
    if (!email) throw invalidRequest('email', 'must be a valid e-mail address');
    const now = this.clock();
    const token = newToken();
    const url = this.portalUrl(token);
    const mail = portalLinkMail({ url, validForHours: LINK_VALIDITY_MS / HOUR });
    const link: TokenRecord = { tokenHash: hashToken(token), kind: 'link', email, accountId: null, expiresAt: now + LINK_VALIDITY_MS, createdAt: now, linkHash: null };
    return this.units.run(async (unit): Promise<LinkRequestOutcome> => {
      const since = now - LINK_REQUEST_WINDOW_MS;
      const recent = await this.repo.recentLinkRequests(unit, email, since);
      if (limits) {
        const own = recent.filter((r) => r.client === client);
        if (own.length >= limits.perClient) return { limitedUntil: own[own.length - limits.perClient]!.at + LINK_REQUEST_WINDOW_MS, by: 'client', limit: limits.perClient };
        if (recent.length >= limits.perAddress) return { limitedUntil: recent[recent.length - limits.perAddress]!.at + LINK_REQUEST_WINDOW_MS, by: 'address', limit: limits.perAddress };
      }
      // Housekeeping rides on a path that is already rate limited.
      await this.repo.recordLinkRequest(unit, email, client, now, since);
      const vendors = await this.repo.vendorsOf(unit, email);
      if (vendors.length > 0) {
        await this.repo.insertToken(unit, link);
        // One vendor's customer gets that vendor's e-mail; one link to several vendors' licenses speaks for none of them (docs/branding.md).
        await this.mail.queueFor(unit, vendors.length === 1 ? vendors[0]! : null, { kind: 'portal_link', to: email, replyTo: null, ...mail });
      }
      return { accepted: true } as const;
    });
  }

  /** Server API: a link for `email` showing only `accountId`'s products, valid 12 hours. */
  async createPrivateSession(principal: Principal, rawEmail: string): Promise<{ url: string; expiresAt: number }> {
    const email = canonicalEmail(rawEmail);
    if (!email) throw invalidRequest('email', 'must be a valid e-mail address');
    const now = this.clock();
    const token = newToken();
    const expiresAt = now + PRIVATE_SESSION_VALIDITY_MS;
    await this.units.run((unit) => this.repo.insertToken(unit, { tokenHash: hashToken(token), kind: 'link', email, accountId: principal.accountId, expiresAt, createdAt: now, linkHash: null }));
    return { url: this.portalUrl(token), expiresAt };
  }

  /**
   * Trades a link token for a session token (the cookie) with the same scope and end. The link
   * keeps working until it expires or a session of it signs out: mail scanners open links before
   * people do.
   */
  async openLink(linkToken: string): Promise<OpenedSession | undefined> {
    const now = this.clock();
    const link = await this.repo.findToken(hashToken(linkToken), 'link', now);
    if (!link) return undefined;
    const sessionToken = newToken();
    await this.units.run((unit) => this.repo.insertToken(unit, { ...link, tokenHash: hashToken(sessionToken), kind: 'session', createdAt: now, linkHash: link.tokenHash }));
    return { sessionToken, expiresAt: link.expiresAt };
  }

  /** The service's time: pages count down to the same clock the rules use. */
  now(): number {
    return this.clock();
  }

  session(sessionToken: string): Promise<TokenRecord | undefined> {
    return this.repo.findToken(hashToken(sessionToken), 'session', this.clock());
  }

  /** Signing out: the session, its link and the link's other sessions (a leaked link opens nothing after). */
  endSession(session: TokenRecord): Promise<void> {
    return this.units.run((unit) => this.repo.endSession(unit, session));
  }

  async licenses(scope: PortalScope): Promise<PortalLicense[]> {
    const now = this.clock();
    return (await this.repo.listLicenses(scope, now)).map((r) => ({
      key: r.key,
      accountId: r.accountId,
      productName: r.productName,
      type: r.type,
      status: licenseStatus(r, r.fallbackEnabled, now),
      expiresAt: r.expiresAt,
      maxDevices: r.maxDevices,
      devices: r.devices,
      deviceCount: r.deviceCount,
      supportEmail: r.supportEmail,
      purchaseNote: r.purchaseNote,
      action: r.actionButtonText && r.actionButtonUrl ? { text: r.actionButtonText, url: renderActionUrl(r.actionButtonUrl, r.key) } : null,
      reset: r.allowDeviceReset
        ? { allowed: true, ...resetQuota(r.resets, r.resetLimit, r.resetWindowMs), limit: r.resetLimit, windowDays: Math.round(r.resetWindowMs / (24 * HOUR)) }
        : { allowed: false },
    }));
  }

  /** Page `page` (from 1) of a license's devices, or undefined when the license is not in `scope` or the page is past the end. */
  async devicePage(scope: PortalScope, rawKey: string, page: number): Promise<(DevicePage & { page: number; pages: number }) | undefined> {
    const result = await this.repo.devicePage(scope, normalizeLicenseKey(rawKey), (page - 1) * DEVICES_PER_PAGE, DEVICES_PER_PAGE);
    if (!result) return undefined;
    const pages = Math.max(1, Math.ceil(result.total / DEVICES_PER_PAGE));
    return page > pages ? undefined : { ...result, page, pages };
  }

  /**
   * A customer's device reset, of every device or of one (`device`): the product must allow resets
   * and the license's quota have room (removing one device uses one reset, as a reset does); the
   * devices then go through the license service (its rule and event), all in one unit.
   */
  resetDevices(scope: PortalScope, rawKey: string, device?: string): Promise<ResetAttempt> {
    const key = normalizeLicenseKey(rawKey);
    const now = this.clock();
    return this.units.run(async (unit): Promise<ResetAttempt> => {
      const rule = await this.repo.lockVisible(unit, scope, key);
      if (!rule) return { outcome: 'not_found' };
      if (!rule.allowDeviceReset) return { outcome: 'forbidden' };
      const since = now - rule.resetWindowMs;
      const quota = resetQuota(await this.repo.resetsSince(unit, key, since), rule.resetLimit, rule.resetWindowMs);
      if (quota.remaining === 0) return { outcome: 'limit', nextAt: quota.nextAt!, limit: rule.resetLimit };
      const actor = { type: 'portal', email: scope.email } as const;
      const removed =
        device === undefined
          ? (await this.licenseService.resetDevicesIn(unit, actor, key)).length
          : (await this.licenseService.removeDeviceIn(unit, actor, key, device))
            ? 1
            : 0;
      if (removed === 0) return { outcome: 'nothing' };
      await this.repo.recordReset(unit, key, now, since);
      return { outcome: 'done', removed };
    });
  }

  private portalUrl(token: string): string {
    return `${this.baseUrl}/portal?token=${token}`;
  }
}

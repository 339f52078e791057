import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { canonicalEmail, isValidEmail, normalizeEmail } from '../../core/email.ts';
import { AppError, invalidRequest } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import { type Account, type AccountService, emailInUse } from '../accounts/service.ts';
import type { MailQueue } from '../mail/queue.ts';
import { emailChangedMail, emailChangeMail, passwordResetMail } from '../mail/templates.ts';
import type { Member, MemberService } from '../members/service.ts';
import type { TwoFactorService } from '../two-factor/service.ts';

const MINUTE = 60_000;
export const SESSION_IDLE_MS = 7 * 24 * 60 * MINUTE;
export const RESET_VALIDITY_MS = 60 * MINUTE;
export const EMAIL_CHANGE_VALIDITY_MS = 60 * MINUTE;
/** last_seen_at is written at most this often per session: a write per page view buys nothing. */
const TOUCH_INTERVAL_MS = 5 * MINUTE;

export interface DashboardSession {
  /** Stable and not secret: CSRF tokens are bound to it. */
  id: string;
  accountId: string;
  /** Who signed in: a member's id, or the account's id for its first owner. */
  memberId: string;
  createdAt: number;
  lastSeenAt: number;
}

export interface PasswordReset {
  accountId: string;
  /** Whose sign-in: an invited member's id, or the account's id for its first owner. */
  memberId: string;
  expiresAt: number;
  createdAt: number;
}

/** A new e-mail address for an account, waiting for a link sent to it to be opened. */
export interface EmailChange {
  accountId: string;
  newEmail: string;
  expiresAt: number;
  createdAt: number;
}

export interface DashboardRepository {
  /** Ends every session of one member (when they are removed). */
  endSessionsOfMember(unit: Unit, memberId: string): Promise<void>;
  insertSession(unit: Unit, tokenHash: string, session: DashboardSession): Promise<void>;
  /** The session whose cookie hashes to `tokenHash`, unless idle since `seenAfter` or earlier. */
  findSession(tokenHash: string, seenAfter: number): Promise<DashboardSession | undefined>;
  touchSession(unit: Unit, id: string, at: number): Promise<void>;
  deleteSession(unit: Unit, tokenHash: string): Promise<void>;
  /** Ends every session of one member (the first owner's: `memberId` is the account's id), and drops sessions idle since `idleBefore`. */
  deleteSessionsOf(unit: Unit, memberId: string, idleBefore: number): Promise<void>;
  insertReset(unit: Unit, tokenHash: string, reset: PasswordReset): Promise<void>;
  findReset(tokenHash: string, now: number): Promise<PasswordReset | undefined>;
  /** Consumes a live reset link: whose it is, or undefined when unknown, expired or already used. */
  takeReset(unit: Unit, tokenHash: string, now: number): Promise<{ accountId: string; memberId: string } | undefined>;
  /** Drops one invited member's reset links (a new password, their removal). */
  deleteResetsOf(unit: Unit, memberId: string): Promise<void>;
  /** Replaces the account's pending e-mail change, if any. */
  insertEmailChange(unit: Unit, tokenHash: string, change: EmailChange): Promise<void>;
  findEmailChange(tokenHash: string, now: number): Promise<EmailChange | undefined>;
  /** The account's live pending change (its account page shows it). */
  findEmailChangeOf(accountId: string, now: number): Promise<EmailChange | undefined>;
  /** Consumes a live confirmation link, as takeReset does. */
  takeEmailChange(unit: Unit, tokenHash: string, now: number): Promise<EmailChange | undefined>;
  /** Drops the first owner's reset links and the account's pending e-mail changes (on a new address or a new password). */
  deleteLinksOf(unit: Unit, accountId: string): Promise<void>;
}

export interface SignedIn {
  /** The cookie's value (secret; only its hash is stored). */
  token: string;
  session: DashboardSession;
}

const newToken = (): string => randomBytes(32).toString('base64url');
/** 256 random bits: a plain SHA-256 makes a stolen table useless. */
const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The principal every dashboard page acts as: the signed-in member, for their account, with their role as it is now. */
export const dashboardPrincipal = (member: Pick<Member, 'accountId' | 'id' | 'role' | 'email'>): Principal => ({
  accountId: member.accountId,
  actor: { type: 'dashboard_user', userId: member.id, email: member.email },
  access: { type: 'role', role: member.role },
});

/**
 * Dashboard accounts and sessions: first-run setup, sign-up, log-in, server-side sessions (7 days
 * idle), password change and reset by e-mail, and the change of the account's address (confirmed
 * by the new one). Accounts themselves (and the password rule) belong to the account service.
 */
export class DashboardAuthService {
  constructor(
    private readonly repo: DashboardRepository,
    private readonly units: UnitRunner,
    private readonly accounts: AccountService,
    private readonly members: MemberService,
    private readonly twoFactor: TwoFactorService,
    private readonly mail: MailQueue,
    private readonly baseUrl: string,
    private readonly clock: () => number = Date.now,
  ) {}

  async needsSetup(): Promise<boolean> {
    return (await this.accounts.count()) === 0;
  }

  /** The first account, only while none exists; signed in at once. */
  async setUp(email: string, password: string): Promise<SignedIn> {
    if (!(await this.needsSetup())) throw new AppError('not_found', 'The dashboard is already set up.');
    const account = await this.accounts.createFirst({ email, password });
    return this.startSession(account.id, account.id);
  }

  async signUp(email: string, password: string): Promise<SignedIn> {
    if (await this.members.findByEmail(email)) throw emailInUse();
    const account = await this.accounts.create({ email, password });
    return this.startSession(account.id, account.id);
  }

  /**
   * undefined for a wrong address or password alike: the caller shows one message for both. The
   * address is an account's own sign-in (its first owner) or an invited member's; either way exactly
   * one argon2 verify runs, a decoy's when the address is unknown. With two-factor sign-in on, the
   * right password yields a challenge, not a session: the code completes it (`answerChallenge`).
   */
  async logIn(email: string, password: string): Promise<SignedIn | { challenge: string } | undefined> {
    let who: { accountId: string; memberId: string } | undefined;
    if (await this.accounts.findByEmail(email)) {
      const account = await this.accounts.verifyPassword(email, password);
      who = account && { accountId: account.id, memberId: account.id };
    } else {
      const member = await this.members.verifyPassword(email, password);
      who = member && { accountId: member.accountId, memberId: member.id };
    }
    if (!who) return undefined;
    if (await this.twoFactor.isEnabled(who.memberId)) return { challenge: await this.twoFactor.challenge(who.accountId, who.memberId) };
    return this.startSession(who.accountId, who.memberId);
  }

  /** The second step of a sign-in: a session for the right code; 'wrong' or 'dead' (start again) otherwise. */
  async answerChallenge(challenge: string, code: string): Promise<SignedIn | 'wrong' | 'dead'> {
    const answer = await this.twoFactor.answer(challenge, code);
    if (typeof answer === 'string') return answer;
    return this.startSession(answer.accountId, answer.memberId);
  }

  /** The session, its account and its member as they are now: a removed member's session has ended. */
  async session(token: string): Promise<{ session: DashboardSession; account: Account; member: Member } | undefined> {
    const now = this.clock();
    const session = await this.repo.findSession(hashToken(token), now - SESSION_IDLE_MS);
    if (!session) return undefined;
    const account = await this.accounts.findById(session.accountId);
    const member = account && (await this.members.findForSession(account.id, session.memberId));
    if (!account || !member) return undefined;
    if (now - session.lastSeenAt >= TOUCH_INTERVAL_MS) await this.units.run((unit) => this.repo.touchSession(unit, session.id, now));
    return { session, account, member };
  }

  /** Uses an invitation once: the new member, signed in at once. undefined when the link is dead. */
  async acceptInvitation(token: string, password: string): Promise<SignedIn | undefined> {
    const member = await this.members.accept(token, password);
    return member && this.startSession(member.accountId, member.id);
  }

  logOut(token: string): Promise<void> {
    return this.units.run((unit) => this.repo.deleteSession(unit, hashToken(token)));
  }

  /** Ends every session of the member, this one included; the browser that asked gets a new one. */
  async changePassword(member: Member, current: string, next: string): Promise<SignedIn> {
    const verified = member.firstOwner ? await this.accounts.verifyPassword(member.email, current) : await this.members.verifyPassword(member.email, current);
    if (!verified) throw invalidRequest('currentPassword', 'is not your current password');
    const passwordHash = await this.accounts.hashNewPassword(next, 'newPassword');
    const signedIn = this.newSession(member.accountId, member.id);
    await this.units.run(async (unit) => {
      if (member.firstOwner) await this.newPassword(unit, member.accountId, passwordHash);
      else await this.newMemberPassword(unit, member.id, passwordHash);
      await this.repo.insertSession(unit, hashToken(signedIn.token), signedIn.session);
    });
    return signedIn;
  }

  /**
   * Queues a single-use link valid 1 hour when the address signs in to a dashboard: an account's own
   * (its first owner) or an invited member's, the same link and rules for both. The caller answers
   * the same either way.
   */
  async requestReset(rawEmail: string): Promise<void> {
    const email = normalizeEmail(rawEmail);
    if (!isValidEmail(email)) throw invalidRequest('email', 'must be a valid e-mail address');
    const account = await this.accounts.findByEmail(email);
    const member = account ? undefined : await this.members.findByEmail(email);
    const who = account ? { accountId: account.id, memberId: account.id, email: account.email } : member && { accountId: member.accountId, memberId: member.id, email: member.email };
    if (!who) return;
    const token = newToken();
    const now = this.clock();
    const url = `${this.baseUrl}/dashboard/reset?token=${token}`;
    const mail = passwordResetMail({ url, validForMinutes: RESET_VALIDITY_MS / MINUTE });
    await this.units.run(async (unit) => {
      await this.repo.insertReset(unit, hashToken(token), { accountId: who.accountId, memberId: who.memberId, expiresAt: now + RESET_VALIDITY_MS, createdAt: now });
      await this.mail.queue(unit, { kind: 'password_reset', to: who.email, replyTo: null, ...mail });
    });
  }

  /** Whether a reset link is live (the form is shown only then). */
  async resetLinkValid(token: string): Promise<boolean> {
    return (await this.repo.findReset(hashToken(token), this.clock())) !== undefined;
  }

  /** Uses the link once: the new password, every session of that sign-in ended. false when the link is dead (or its member was removed). */
  async resetPassword(token: string, password: string): Promise<boolean> {
    const passwordHash = await this.accounts.hashNewPassword(password);
    const now = this.clock();
    // A member removed since the link was sent: dead (their removal drops their links too; this covers the moment between).
    const pending = await this.repo.findReset(hashToken(token), now);
    if (!pending || (pending.memberId !== pending.accountId && !(await this.members.findById(pending.memberId)))) return false;
    return this.units.run(async (unit) => {
      const taken = await this.repo.takeReset(unit, hashToken(token), now);
      if (!taken) return false;
      if (taken.memberId === taken.accountId) await this.newPassword(unit, taken.accountId, passwordHash);
      else await this.newMemberPassword(unit, taken.memberId, passwordHash);
      return true;
    });
  }

  /** An invited member's new password: their sessions and reset links end with the old one. */
  private async newMemberPassword(unit: Unit, memberId: string, passwordHash: string): Promise<void> {
    await this.members.setPassword(unit, memberId, passwordHash);
    await this.repo.deleteSessionsOf(unit, memberId, this.clock() - SESSION_IDLE_MS);
    await this.repo.deleteResetsOf(unit, memberId);
  }

  /**
   * The account's own sign-in (its first owner) has a new password; that ends everything the old one
   * may have started: every session of that sign-in (members keep theirs), and every pending
   * link of the account (reset links, an e-mail change waiting for its confirmation). Whoever knew
   * the old password and asked to move the account to their own address loses that move.
   */
  private async newPassword(unit: Unit, accountId: string, passwordHash: string): Promise<void> {
    await this.accounts.setPassword(unit, accountId, passwordHash);
    await this.repo.deleteSessionsOf(unit, accountId, this.clock() - SESSION_IDLE_MS);
    await this.repo.deleteLinksOf(unit, accountId);
  }

  /**
   * Asks for the account's address (its first owner's sign-in) to become `rawEmail`: checks the password, then e-mails a
   * single-use link valid 1 hour to the new address. Nothing changes until that link is used.
   */
  async requestEmailChange(member: Member, currentPassword: string, rawEmail: string): Promise<EmailChange> {
    // The account's address is its first owner's sign-in; an invited member's address is the one invited.
    if (!member.firstOwner) throw new AppError('insufficient_scope', "Only the account's first owner changes its e-mail address.");
    const accountId = member.accountId;
    const account = await this.accounts.findById(accountId);
    if (!account) throw new AppError('not_found', 'Account not found.');
    const newEmail = canonicalEmail(rawEmail);
    if (!newEmail) throw invalidRequest('newEmail', 'must be a valid e-mail address');
    if (newEmail === account.email) throw invalidRequest('newEmail', 'is already your e-mail address');
    if (!(await this.accounts.verifyPassword(account.email, currentPassword))) throw invalidRequest('password', 'is not right');
    if ((await this.accounts.findByEmail(newEmail)) || (await this.members.findByEmail(newEmail))) throw emailInUse('newEmail');
    const token = newToken();
    const now = this.clock();
    const change: EmailChange = { accountId, newEmail, expiresAt: now + EMAIL_CHANGE_VALIDITY_MS, createdAt: now };
    const mail = emailChangeMail({ url: `${this.baseUrl}/dashboard/email/confirm?token=${token}`, newEmail, validForMinutes: EMAIL_CHANGE_VALIDITY_MS / MINUTE });
    await this.units.run(async (unit) => {
      await this.repo.insertEmailChange(unit, hashToken(token), change);
      await this.mail.queue(unit, { kind: 'email_change', to: newEmail, replyTo: null, ...mail });
    });
    return change;
  }

  /** The account's pending change, while its link is live. */
  pendingEmailChange(accountId: string): Promise<EmailChange | undefined> {
    return this.repo.findEmailChangeOf(accountId, this.clock());
  }

  /** The change a confirmation link stands for, while it is live (the confirmation page shows it). */
  emailChangeFor(token: string): Promise<EmailChange | undefined> {
    return this.repo.findEmailChange(hashToken(token), this.clock());
  }

  /**
   * Uses a confirmation link once: the account's address becomes the new one. undefined when the
   * link is dead; `emailInUse` when another account took the address meanwhile.
   */
  confirmEmailChange(token: string): Promise<Account | undefined> {
    const now = this.clock();
    return this.units.run(async (unit) => {
      const change = await this.repo.takeEmailChange(unit, hashToken(token), now);
      if (!change) return undefined;
      return this.moveAccount(unit, change.accountId, change.newEmail);
    });
  }

  /** The command line's change (whoever runs the server): at once, without a link; the old address is told. */
  async setEmail(currentEmail: string, rawEmail: string): Promise<Account> {
    const account = await this.accounts.requireByEmail(currentEmail);
    const newEmail = canonicalEmail(rawEmail);
    if (!newEmail) throw invalidRequest('newEmail', 'must be a valid e-mail address');
    if (newEmail === account.email) return account;
    return this.units.run((unit) => this.moveAccount(unit, account.id, newEmail));
  }

  /** The address changes; links sent to or asked from the old one die; the old address gets a notice. */
  private async moveAccount(unit: Unit, accountId: string, newEmail: string): Promise<Account> {
    const account = await this.accounts.findById(accountId, unit);
    if (!account) throw new AppError('not_found', 'Account not found.');
    await this.accounts.setEmail(unit, accountId, newEmail);
    await this.repo.deleteLinksOf(unit, accountId);
    const notice = emailChangedMail({ newEmail, dashboardUrl: `${this.baseUrl}/dashboard` });
    await this.mail.queue(unit, { kind: 'email_changed', to: account.email, replyTo: null, ...notice });
    return { ...account, email: newEmail };
  }

  private async startSession(accountId: string, memberId: string): Promise<SignedIn> {
    const signedIn = this.newSession(accountId, memberId);
    await this.units.run((unit) => this.repo.insertSession(unit, hashToken(signedIn.token), signedIn.session));
    return signedIn;
  }

  private newSession(accountId: string, memberId: string): SignedIn {
    const now = this.clock();
    return { token: newToken(), session: { id: randomUUID(), accountId, memberId, createdAt: now, lastSeenAt: now } };
  }
}

import { createHash, randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { type Role, ROLES } from '../../core/access.ts';
import { canonicalEmail, normalizeEmail } from '../../core/email.ts';
import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import { newInvitationId, newMemberId } from '../../core/ids.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import { type AccountService, checkPassword } from '../accounts/service.ts';
import type { MailQueue } from '../mail/queue.ts';
import { memberInvitationMail } from '../mail/templates.ts';
import type { TeamLog } from './team-log.ts';

const DAY = 24 * 3600_000;
export const INVITATION_VALIDITY_MS = 7 * DAY;

/**
 * A person who signs in to an account's dashboard. The account's own sign-in (its e-mail and
 * password, made by the CLI or the first-run setup) is its first owner, with the account's id as its
 * member id; everyone else was invited.
 */
export interface Member {
  id: string;
  accountId: string;
  email: string;
  role: Role;
  createdAt: number;
  /** The account's own sign-in: always an owner, never removed (so an account always has an owner). */
  firstOwner: boolean;
}

/** An invited member's stored sign-in. */
export interface MemberRecord extends Omit<Member, 'firstOwner'> {
  passwordHash: string;
}

export interface Invitation {
  id: string;
  accountId: string;
  email: string;
  role: Role;
  /** The member who invited. */
  invitedBy: string;
  expiresAt: number;
  createdAt: number;
}

export interface MemberRepository {
  insert(unit: Unit, member: MemberRecord): Promise<void>;
  findByEmail(email: string): Promise<MemberRecord | undefined>;
  findById(id: string): Promise<MemberRecord | undefined>;
  listByAccount(accountId: string): Promise<MemberRecord[]>;
  setRole(unit: Unit, accountId: string, id: string, role: Role): Promise<number>;
  setPasswordHash(unit: Unit, id: string, passwordHash: string): Promise<number>;
  delete(unit: Unit, accountId: string, id: string): Promise<number>;
  /** Replaces a pending invitation of the same address to the same account. */
  insertInvitation(unit: Unit, tokenHash: string, invitation: Invitation): Promise<void>;
  listInvitations(accountId: string, now: number): Promise<Invitation[]>;
  findInvitation(tokenHash: string, now: number): Promise<Invitation | undefined>;
  /** Consumes a live invitation: single use, even against a concurrent use. */
  takeInvitation(unit: Unit, tokenHash: string, now: number): Promise<Invitation | undefined>;
  deleteInvitation(unit: Unit, accountId: string, id: string): Promise<number>;
}

/** What else goes when a member is removed, in the removal's unit: their sessions, their two-factor data. */
export type OnMemberRemoved = (unit: Unit, memberId: string) => Promise<void>;

const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');
const checkRole = (role: string, path = 'role'): Role => {
  if (!ROLES.includes(role as Role)) throw invalidRequest(path, `must be one of ${ROLES.join(', ')}`);
  return role as Role;
};
const addressTaken = () => new AppError('invalid_request', 'This address already signs in to a dashboard.', [{ path: 'email', message: 'already signs in to a dashboard' }]);

/** Verified against when the address is unknown, so a failed sign-in takes as long either way. */
let decoyHash: Promise<string> | undefined;

/**
 * Members and invitations. Who may call what is decided before (core/access.ts: the `members`
 * area is an owner's); here are the rules of the thing itself: one address, one sign-in; the
 * first owner stays; an invitation works once, for 7 days, and only for the address it was sent to.
 */
export class MemberService {
  constructor(
    private readonly repo: MemberRepository,
    private readonly units: UnitRunner,
    private readonly accounts: AccountService,
    private readonly onRemoved: OnMemberRemoved,
    private readonly mail: MailQueue,
    private readonly baseUrl: string,
    private readonly log: TeamLog,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Everyone who signs in to the account: the first owner, then the invited in order of joining. */
  async list(principal: Principal): Promise<Member[]> {
    const account = await this.accounts.findById(principal.accountId);
    if (!account) throw notFound('Account');
    const first: Member = { id: account.id, accountId: account.id, email: account.email, role: 'owner', createdAt: account.createdAt, firstOwner: true };
    return [first, ...(await this.repo.listByAccount(principal.accountId)).map(({ passwordHash: _, ...m }) => ({ ...m, firstOwner: false }))];
  }

  /** The member a session names, while they still belong to the account (undefined once removed). */
  async findForSession(accountId: string, memberId: string): Promise<Member | undefined> {
    if (memberId === accountId) {
      const account = await this.accounts.findById(accountId);
      return account && { id: account.id, accountId, email: account.email, role: 'owner', createdAt: account.createdAt, firstOwner: true };
    }
    const record = await this.repo.findById(memberId);
    if (!record || record.accountId !== accountId) return undefined;
    const { passwordHash: _, ...member } = record;
    return { ...member, firstOwner: false };
  }

  findById(id: string): Promise<MemberRecord | undefined> {
    return this.repo.findById(id);
  }

  findByEmail(email: string): Promise<MemberRecord | undefined> {
    return this.repo.findByEmail(normalizeEmail(email));
  }

  /** The invited member when the password is right; an unknown address costs the same argon2 verify. */
  async verifyPassword(email: string, password: string): Promise<MemberRecord | undefined> {
    const member = await this.findByEmail(email);
    if (!member) {
      decoyHash ??= hash('tessera decoy password');
      await verify(await decoyHash, password);
      return undefined;
    }
    return (await verify(member.passwordHash, password)) ? member : undefined;
  }

  /** Sends a single-use link valid 7 days to `rawEmail`; inviting the address again replaces the older link. */
  async invite(principal: Principal, rawEmail: string, rawRole: string): Promise<Invitation> {
    const email = canonicalEmail(rawEmail);
    if (!email) throw invalidRequest('email', 'must be a valid e-mail address');
    const role = checkRole(rawRole);
    if (await this.addressSignsIn(email)) throw addressTaken();
    const account = await this.accounts.findById(principal.accountId);
    if (!account) throw notFound('Account');
    const token = randomBytes(32).toString('base64url');
    const now = this.clock();
    const invitedBy = principal.actor.type === 'dashboard_user' ? principal.actor.userId : account.id;
    const invitation: Invitation = { id: newInvitationId(), accountId: account.id, email, role, invitedBy, expiresAt: now + INVITATION_VALIDITY_MS, createdAt: now };
    const inviter = (await this.findForSession(account.id, invitedBy))?.email ?? account.email;
    const mail = memberInvitationMail({ url: `${this.baseUrl}/dashboard/invitation?token=${token}`, inviter, role, validForDays: INVITATION_VALIDITY_MS / DAY });
    await this.units.run(async (unit) => {
      await this.repo.insertInvitation(unit, hashToken(token), invitation);
      await this.log.record(unit, principal, 'member.invited', { email, role });
      await this.mail.queue(unit, { kind: 'member_invitation', to: email, replyTo: inviter, ...mail });
    });
    return invitation;
  }

  invitations(principal: Principal): Promise<Invitation[]> {
    return this.repo.listInvitations(principal.accountId, this.clock());
  }

  async revokeInvitation(principal: Principal, id: string): Promise<void> {
    const invitation = (await this.invitations(principal)).find((i) => i.id === id);
    const revoked = await this.units.run(async (unit) => {
      const n = await this.repo.deleteInvitation(unit, principal.accountId, id);
      if (n > 0) await this.log.record(unit, principal, 'invitation.revoked', { email: invitation?.email ?? null, role: invitation?.role ?? null });
      return n;
    });
    if (revoked === 0) throw notFound('Invitation');
  }

  /** The invitation a link stands for, while it is live (the acceptance page shows it). */
  invitationFor(token: string): Promise<Invitation | undefined> {
    return this.repo.findInvitation(hashToken(token), this.clock());
  }

  /**
   * Uses the link once: the invited address becomes a member with the role it was invited with
   * and the password chosen here. undefined when the link is dead; a 400 when the address signs in
   * elsewhere meanwhile (the link is then used up).
   */
  async accept(token: string, password: string): Promise<Member | undefined> {
    checkPassword(password);
    const passwordHash = await hash(password);
    const now = this.clock();
    const pending = await this.repo.findInvitation(hashToken(token), now);
    if (!pending) return undefined;
    // Checked before the unit (reads of accounts join none); members.email's unique index closes the race between two invitations.
    if (await this.addressSignsIn(pending.email)) throw addressTaken();
    return this.units.run(async (unit) => {
      const invitation = await this.repo.takeInvitation(unit, hashToken(token), now);
      if (!invitation) return undefined;
      const member: MemberRecord = { id: newMemberId(), accountId: invitation.accountId, email: invitation.email, role: invitation.role, createdAt: now, passwordHash };
      await this.repo.insert(unit, member);
      // The new member joins by their own hand; who invited them is the invitation's entry.
      await this.log.record(unit, { accountId: member.accountId, actor: { type: 'dashboard_user', userId: member.id, email: member.email } }, 'member.joined', { email: member.email, role: member.role, invitedBy: invitation.invitedBy });
      const { passwordHash: _, ...shown } = member;
      return { ...shown, firstOwner: false };
    });
  }

  /** A new role, effective at the member's next request. The first owner stays an owner. */
  async changeRole(principal: Principal, memberId: string, rawRole: string): Promise<void> {
    const role = checkRole(rawRole);
    if (memberId === principal.accountId) throw firstOwnerStays();
    const before = await this.memberOf(principal, memberId);
    await this.units.run(async (unit) => {
      if ((await this.repo.setRole(unit, principal.accountId, memberId, role)) === 0) throw notFound('Member');
      if (before.role !== role) await this.log.record(unit, principal, 'member.role_changed', { email: before.email, role: { from: before.role, to: role } });
    });
  }

  /** An invited member of the principal's account (404 otherwise: another account's member is unknown here). */
  private async memberOf(principal: Principal, memberId: string): Promise<MemberRecord> {
    const found = await this.repo.findById(memberId);
    if (!found || found.accountId !== principal.accountId) throw notFound('Member');
    return found;
  }

  /** Removes a member: their sessions end in the same unit. The first owner cannot be removed. */
  async remove(principal: Principal, memberId: string): Promise<void> {
    if (memberId === principal.accountId) throw firstOwnerStays();
    const member = await this.memberOf(principal, memberId);
    const removed = await this.units.run(async (unit) => {
      const n = await this.repo.delete(unit, principal.accountId, memberId);
      if (n > 0) {
        await this.onRemoved(unit, memberId);
        await this.log.record(unit, principal, 'member.removed', { email: member.email, role: member.role });
      }
      return n;
    });
    if (removed === 0) throw notFound('Member');
  }

  /** An invited member's new password (the dashboard ends their other sessions in the same unit). */
  async setPassword(unit: Unit, memberId: string, passwordHash: string): Promise<void> {
    if ((await this.repo.setPasswordHash(unit, memberId, passwordHash)) === 0) throw notFound('Member');
  }

  /** Whether an address already signs in: an account's own or a member's. */
  private async addressSignsIn(email: string): Promise<boolean> {
    return (await this.accounts.findByEmail(email)) !== undefined || (await this.repo.findByEmail(email)) !== undefined;
  }
}

const firstOwnerStays = () =>
  new AppError('invalid_request', "The account's first owner stays an owner: it is the account's own sign-in.", [{ path: 'memberId', message: 'is the first owner' }]);

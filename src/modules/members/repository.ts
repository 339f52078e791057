import type { Role } from '../../core/access.ts';
import { timeOrderedFloor } from '../../core/ids.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import type { MemberInvitationsTable, MembersTable } from '../../storage/schema.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { Actor } from '../../core/principal.ts';
import type { Invitation, MemberRecord, MemberRepository } from './service.ts';
import type { TeamEvent, TeamEventType, TeamLogRepository } from './team-log.ts';

const toMember = (r: MembersTable): MemberRecord => ({ id: r.id, accountId: r.account_id, email: r.email, role: r.role, createdAt: r.created_at, passwordHash: r.password_hash });
const toInvitation = (r: MemberInvitationsTable): Invitation => ({
  id: r.id,
  accountId: r.account_id,
  email: r.email,
  role: r.role,
  invitedBy: r.invited_by,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
});

export class SqlMemberRepository implements MemberRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async insert(unit: Unit, m: MemberRecord): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('members').values({ id: m.id, account_id: m.accountId, email: m.email, password_hash: m.passwordHash, role: m.role, created_at: m.createdAt }),
    );
  }

  async findByEmail(email: string): Promise<MemberRecord | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('members').selectAll().where('email', '=', email));
    return row && toMember(row);
  }

  async findById(id: string): Promise<MemberRecord | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('members').selectAll().where('id', '=', id));
    return row && toMember(row);
  }

  async listByAccount(accountId: string): Promise<MemberRecord[]> {
    const rows = await this.store.read.all(this.db.selectFrom('members').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id'));
    return rows.map(toMember);
  }

  setRole(unit: Unit, accountId: string, id: string, role: Role): Promise<number> {
    return executorOf(unit).run(this.db.updateTable('members').set({ role }).where('id', '=', id).where('account_id', '=', accountId));
  }

  setPasswordHash(unit: Unit, id: string, passwordHash: string): Promise<number> {
    return executorOf(unit).run(this.db.updateTable('members').set({ password_hash: passwordHash }).where('id', '=', id));
  }

  delete(unit: Unit, accountId: string, id: string): Promise<number> {
    return executorOf(unit).run(this.db.deleteFrom('members').where('id', '=', id).where('account_id', '=', accountId));
  }

  async insertInvitation(unit: Unit, tokenHash: string, i: Invitation): Promise<void> {
    const ex = executorOf(unit);
    // One live invitation per address and account; expired ones of anyone go too.
    await ex.run(
      this.db.deleteFrom('member_invitations').where((eb) => eb.or([eb.and([eb('account_id', '=', i.accountId), eb('email', '=', i.email)]), eb('expires_at', '<=', i.createdAt)])),
    );
    await ex.run(
      this.db.insertInto('member_invitations').values({
        token_hash: tokenHash,
        id: i.id,
        account_id: i.accountId,
        email: i.email,
        role: i.role,
        invited_by: i.invitedBy,
        expires_at: i.expiresAt,
        created_at: i.createdAt,
      }),
    );
  }

  async listInvitations(accountId: string, now: number): Promise<Invitation[]> {
    const rows = await this.store.read.all(
      this.db.selectFrom('member_invitations').selectAll().where('account_id', '=', accountId).where('expires_at', '>', now).orderBy('created_at').orderBy('id'),
    );
    return rows.map(toInvitation);
  }

  async findInvitation(tokenHash: string, now: number): Promise<Invitation | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('member_invitations').selectAll().where('token_hash', '=', tokenHash).where('expires_at', '>', now));
    return row && toInvitation(row);
  }

  async takeInvitation(unit: Unit, tokenHash: string, now: number): Promise<Invitation | undefined> {
    const ex = executorOf(unit);
    const row = await ex.first(this.db.selectFrom('member_invitations').selectAll().where('token_hash', '=', tokenHash).where('expires_at', '>', now));
    if (!row) return undefined;
    // Single use: of two concurrent uses, only the one whose delete removed the row goes on.
    return (await ex.run(this.db.deleteFrom('member_invitations').where('token_hash', '=', tokenHash))) === 1 ? toInvitation(row) : undefined;
  }

  deleteInvitation(unit: Unit, accountId: string, id: string): Promise<number> {
    return executorOf(unit).run(this.db.deleteFrom('member_invitations').where('id', '=', id).where('account_id', '=', accountId));
  }
}

/** The team's log (migration 032): a page newest first is a walk of `member_events_account_idx`. */
export class SqlTeamLogRepository implements TeamLogRepository {
  constructor(private readonly store: Store) {}

  async insert(unit: Unit, e: TeamEvent): Promise<void> {
    await executorOf(unit).run(
      this.store.db
        .insertInto('member_events')
        .values({ id: e.id, account_id: e.accountId, type: e.type, actor: JSON.stringify(e.actor), changes: JSON.stringify(e.changes), created_at: e.createdAt }),
    );
  }

  async purge(before: number): Promise<number> {
    // Ids sort by time (the primary key's start is the oldest); a team's changes are few, so one statement.
    return this.store.write((tx) => tx.run(this.store.db.deleteFrom('member_events').where('id', '<', timeOrderedFloor(before))));
  }

  async list(accountId: string, limit: number): Promise<TeamEvent[]> {
    const rows = await this.store.read.all(this.store.db.selectFrom('member_events').selectAll().where('account_id', '=', accountId).orderBy('id', 'desc').limit(limit));
    return rows.map((r) => ({ id: r.id, accountId: r.account_id, type: r.type as TeamEventType, actor: JSON.parse(r.actor) as Actor, changes: JSON.parse(r.changes) as Record<string, unknown>, createdAt: Number(r.created_at) }));
  }
}

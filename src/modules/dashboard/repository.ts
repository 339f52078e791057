import type { ExpressionBuilder } from 'kysely';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Database } from '../../storage/schema.ts';
import type { Store } from '../../storage/index.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { DashboardRepository, DashboardSession, EmailChange, PasswordReset } from './service.ts';

type SessionRow = { id: string; token_hash: string; account_id: string; member_id: string | null; created_at: number; last_seen_at: number };
const toSession = (r: SessionRow): DashboardSession => ({
  id: r.id,
  accountId: r.account_id,
  memberId: r.member_id ?? r.account_id,
  createdAt: Number(r.created_at),
  lastSeenAt: Number(r.last_seen_at),
});

type EmailChangeRow = { account_id: string; new_email: string; expires_at: number; created_at: number };
const toEmailChange = (r: EmailChangeRow): EmailChange => ({ accountId: r.account_id, newEmail: r.new_email, expiresAt: Number(r.expires_at), createdAt: Number(r.created_at) });

export class SqlDashboardRepository implements DashboardRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async insertSession(unit: Unit, tokenHash: string, s: DashboardSession): Promise<void> {
    await executorOf(unit).run(
      this.db.insertInto('dashboard_sessions').values({ id: s.id, token_hash: tokenHash, account_id: s.accountId, member_id: s.memberId, created_at: s.createdAt, last_seen_at: s.lastSeenAt }),
    );
  }

  async findSession(tokenHash: string, seenAfter: number): Promise<DashboardSession | undefined> {
    const row = await this.store.read.first(
      this.db.selectFrom('dashboard_sessions').selectAll().where('token_hash', '=', tokenHash).where('last_seen_at', '>', seenAfter),
    );
    return row && toSession(row);
  }

  async touchSession(unit: Unit, id: string, at: number): Promise<void> {
    await executorOf(unit).run(this.db.updateTable('dashboard_sessions').set({ last_seen_at: at }).where('id', '=', id));
  }

  async deleteSession(unit: Unit, tokenHash: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash));
  }

  async deleteSessionsOf(unit: Unit, memberId: string, idleBefore: number): Promise<void> {
    const ex = executorOf(unit);
    await this.endSessionsOfMember(unit, memberId);
    // Housekeeping on a rare path: sessions idle past their end, of any account.
    await ex.run(this.db.deleteFrom('dashboard_sessions').where('last_seen_at', '<=', idleBefore));
  }

  async endSessionsOfMember(unit: Unit, memberId: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('dashboard_sessions').where('member_id', '=', memberId));
  }

  async insertReset(unit: Unit, tokenHash: string, r: PasswordReset): Promise<void> {
    const ex = executorOf(unit);
    // One live link per sign-in: a new request replaces the older one; expired links of anyone go too.
    await ex.run(this.db.deleteFrom('dashboard_password_resets').where((eb) => eb.or([this.resetsOf(eb, r.accountId, r.memberId), eb('expires_at', '<=', r.createdAt)])));
    await ex.run(
      this.db.insertInto('dashboard_password_resets').values({ token_hash: tokenHash, account_id: r.accountId, member_id: r.memberId, expires_at: r.expiresAt, created_at: r.createdAt }),
    );
  }

  /** One sign-in's links: a member's by member_id; the first owner's are the account's with its own id or none (links from before migration 032). */
  private resetsOf(eb: ExpressionBuilder<Database, 'dashboard_password_resets'>, accountId: string, memberId: string) {
    return memberId === accountId ? eb.and([eb('account_id', '=', accountId), eb.or([eb('member_id', 'is', null), eb('member_id', '=', accountId)])]) : eb('member_id', '=', memberId);
  }

  async deleteResetsOf(unit: Unit, memberId: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('dashboard_password_resets').where('member_id', '=', memberId));
  }

  async findReset(tokenHash: string, now: number): Promise<PasswordReset | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('dashboard_password_resets').selectAll().where('token_hash', '=', tokenHash).where('expires_at', '>', now));
    return row && { accountId: row.account_id, memberId: row.member_id ?? row.account_id, expiresAt: Number(row.expires_at), createdAt: Number(row.created_at) };
  }

  async takeReset(unit: Unit, tokenHash: string, now: number): Promise<{ accountId: string; memberId: string } | undefined> {
    const ex = executorOf(unit);
    const row = await ex.first(this.db.selectFrom('dashboard_password_resets').select(['account_id', 'member_id']).where('token_hash', '=', tokenHash).where('expires_at', '>', now));
    if (!row) return undefined;
    // Single use: of two concurrent uses, only the one whose delete removed the row goes on.
    if ((await ex.run(this.db.deleteFrom('dashboard_password_resets').where('token_hash', '=', tokenHash))) !== 1) return undefined;
    return { accountId: row.account_id, memberId: row.member_id ?? row.account_id };
  }

  async insertEmailChange(unit: Unit, tokenHash: string, c: EmailChange): Promise<void> {
    const ex = executorOf(unit);
    // As with reset links: one pending change per account, and expired ones of anyone go.
    await ex.run(this.db.deleteFrom('dashboard_email_changes').where((eb) => eb.or([eb('account_id', '=', c.accountId), eb('expires_at', '<=', c.createdAt)])));
    await ex.run(
      this.db.insertInto('dashboard_email_changes').values({ token_hash: tokenHash, account_id: c.accountId, new_email: c.newEmail, expires_at: c.expiresAt, created_at: c.createdAt }),
    );
  }

  async findEmailChange(tokenHash: string, now: number): Promise<EmailChange | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('dashboard_email_changes').selectAll().where('token_hash', '=', tokenHash).where('expires_at', '>', now));
    return row && toEmailChange(row);
  }

  async findEmailChangeOf(accountId: string, now: number): Promise<EmailChange | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('dashboard_email_changes').selectAll().where('account_id', '=', accountId).where('expires_at', '>', now));
    return row && toEmailChange(row);
  }

  async takeEmailChange(unit: Unit, tokenHash: string, now: number): Promise<EmailChange | undefined> {
    const ex = executorOf(unit);
    const row = await ex.first(this.db.selectFrom('dashboard_email_changes').selectAll().where('token_hash', '=', tokenHash).where('expires_at', '>', now));
    if (!row) return undefined;
    // Single use, as takeReset.
    return (await ex.run(this.db.deleteFrom('dashboard_email_changes').where('token_hash', '=', tokenHash))) === 1 ? toEmailChange(row) : undefined;
  }

  async deleteLinksOf(unit: Unit, accountId: string): Promise<void> {
    const ex = executorOf(unit);
    await ex.run(this.db.deleteFrom('dashboard_password_resets').where((eb) => this.resetsOf(eb, accountId, accountId)));
    await ex.run(this.db.deleteFrom('dashboard_email_changes').where('account_id', '=', accountId));
  }
}

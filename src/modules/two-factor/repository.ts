import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import { type Challenge, CHALLENGE_VALIDITY_MS, type TwoFactorRecord, type TwoFactorRepository } from './service.ts';

export class SqlTwoFactorRepository implements TwoFactorRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async find(memberId: string): Promise<TwoFactorRecord | undefined> {
    const r = await this.store.read.first(this.db.selectFrom('two_factor').selectAll().where('member_id', '=', memberId));
    return r && { memberId: r.member_id, accountId: r.account_id, secretSealed: r.secret_sealed, enabledAt: r.enabled_at, lastStep: r.last_step, createdAt: r.created_at };
  }

  async replace(unit: Unit, t: TwoFactorRecord): Promise<void> {
    await this.delete(unit, t.memberId);
    await executorOf(unit).run(
      this.db.insertInto('two_factor').values({
        member_id: t.memberId,
        account_id: t.accountId,
        secret_sealed: t.secretSealed,
        enabled_at: t.enabledAt,
        last_step: t.lastStep,
        created_at: t.createdAt,
      }),
    );
  }

  async enable(unit: Unit, memberId: string, secretSealed: string, step: number, at: number, codeHashes: string[]): Promise<boolean> {
    const ex = executorOf(unit);
    const changed = await ex.run(
      this.db.updateTable('two_factor').set({ enabled_at: at, last_step: step }).where('member_id', '=', memberId).where('secret_sealed', '=', secretSealed).where('enabled_at', 'is', null),
    );
    if (changed !== 1) return false;
    const accountId = (await ex.first(this.db.selectFrom('two_factor').select('account_id').where('member_id', '=', memberId)))!.account_id;
    await ex.run(this.db.insertInto('two_factor_recovery_codes').values(codeHashes.map((code_hash) => ({ member_id: memberId, code_hash, account_id: accountId, used_at: null }))));
    return true;
  }

  async useStep(unit: Unit, memberId: string, step: number): Promise<boolean> {
    const changed = await executorOf(unit).run(
      this.db
        .updateTable('two_factor')
        .set({ last_step: step })
        .where('member_id', '=', memberId)
        .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)])),
    );
    return changed === 1;
  }

  async useRecoveryCode(unit: Unit, memberId: string, codeHash: string, at: number): Promise<boolean> {
    const changed = await executorOf(unit).run(
      this.db.updateTable('two_factor_recovery_codes').set({ used_at: at }).where('member_id', '=', memberId).where('code_hash', '=', codeHash).where('used_at', 'is', null),
    );
    return changed === 1;
  }

  async unusedRecoveryCodes(memberId: string): Promise<number> {
    const row = await this.store.read.first(
      this.db.selectFrom('two_factor_recovery_codes').select((eb) => eb.fn.countAll().as('n')).where('member_id', '=', memberId).where('used_at', 'is', null),
    );
    return Number(row?.n ?? 0);
  }

  async delete(unit: Unit, memberId: string): Promise<void> {
    const ex = executorOf(unit);
    await ex.run(this.db.deleteFrom('two_factor_recovery_codes').where('member_id', '=', memberId));
    await ex.run(this.db.deleteFrom('two_factor').where('member_id', '=', memberId));
  }

  async isRequired(accountId: string): Promise<boolean> {
    return (await this.store.read.first(this.db.selectFrom('two_factor_required').select('account_id').where('account_id', '=', accountId))) !== undefined;
  }

  async setRequired(unit: Unit, accountId: string, required: boolean, at: number): Promise<void> {
    const ex = executorOf(unit);
    await ex.run(this.db.deleteFrom('two_factor_required').where('account_id', '=', accountId));
    if (required) await ex.run(this.db.insertInto('two_factor_required').values({ account_id: accountId, created_at: at }));
  }

  async insertChallenge(unit: Unit, tokenHash: string, c: Challenge): Promise<void> {
    const ex = executorOf(unit);
    // Expired challenges of anyone go on the way (a rare write: a sign-in with two-factor).
    await ex.run(this.db.deleteFrom('sign_in_challenges').where('expires_at', '<=', c.expiresAt - CHALLENGE_VALIDITY_MS));
    await ex.run(this.db.insertInto('sign_in_challenges').values({ token_hash: tokenHash, account_id: c.accountId, member_id: c.memberId, attempts: c.attempts, expires_at: c.expiresAt }));
  }

  async attemptChallenge(unit: Unit, tokenHash: string, now: number, maxAttempts: number): Promise<Challenge | undefined> {
    const ex = executorOf(unit);
    // The attempt is counted before the code is checked: concurrent guesses cannot share one count.
    const changed = await ex.run(
      this.db
        .updateTable('sign_in_challenges')
        .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
        .where('token_hash', '=', tokenHash)
        .where('expires_at', '>', now)
        .where('attempts', '<', maxAttempts),
    );
    if (changed !== 1) return undefined;
    const r = (await ex.first(this.db.selectFrom('sign_in_challenges').selectAll().where('token_hash', '=', tokenHash)))!;
    return { accountId: r.account_id, memberId: r.member_id, attempts: r.attempts, expiresAt: r.expires_at };
  }

  async deleteChallenge(unit: Unit, tokenHash: string): Promise<void> {
    await executorOf(unit).run(this.db.deleteFrom('sign_in_challenges').where('token_hash', '=', tokenHash));
  }
}

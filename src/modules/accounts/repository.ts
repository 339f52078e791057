import type { Store } from '../../storage/index.ts';
import { isUniqueViolation } from '../../storage/constraint.ts';
import { likeContains } from '../../storage/like.ts';
import { executorOf, readerOf } from '../../storage/unit-of-work.ts';
import { AppError } from '../../core/errors.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import { type Account, type AccountRepository, emailInUse } from './service.ts';

type Row = { id: string; email: string; password_hash: string; plan: 'free' | 'plus'; created_at: number };
const toAccount = (r: Row): Account => ({ id: r.id, email: r.email, passwordHash: r.password_hash, plan: r.plan, createdAt: r.created_at });

export class SqlAccountRepository implements AccountRepository {
  constructor(private readonly store: Store) {}

  private get db() {
    return this.store.db;
  }

  async insert(unit: Unit, account: Account): Promise<void> {
    try {
      await executorOf(unit).run(
        this.db.insertInto('accounts').values({
          id: account.id,
          email: account.email,
          password_hash: account.passwordHash,
          plan: account.plan,
          created_at: account.createdAt,
        }),
      );
    } catch (error) {
      // Two creations of one address at once: both passed the service's check before either inserted.
      throw isUniqueViolation(error) ? emailInUse() : error;
    }
  }

  async insertFirst(unit: Unit, account: Account): Promise<boolean> {
    const tx = executorOf(unit);
    // PostgreSQL: two transactions would each see no account under READ COMMITTED, so the table
    // is locked against other writers first. SQLite's units already run one at a time.
    if (this.store.lockRows) await tx.run({ sql: 'LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE', parameters: [] });
    if (await tx.first(this.db.selectFrom('accounts').select('id').limit(1))) return false;
    await this.insert(unit, account);
    return true;
  }

  async findByEmail(email: string): Promise<Account | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('accounts').selectAll().where('email', '=', email));
    return row && toAccount(row);
  }

  async findById(id: string, unit?: Unit): Promise<Account | undefined> {
    const row = await readerOf(this.store, unit).first(this.db.selectFrom('accounts').selectAll().where('id', '=', id));
    return row && toAccount(row);
  }

  setPlan(unit: Unit, id: string, plan: Account['plan']): Promise<number> {
    return executorOf(unit).run(this.db.updateTable('accounts').set({ plan }).where('id', '=', id));
  }

  async setEmail(unit: Unit, id: string, email: string): Promise<void> {
    try {
      const changed = await executorOf(unit).run(
        this.db
          .updateTable('accounts')
          .set({ email })
          .where('id', '=', id)
          .where((eb) => eb.not(eb.exists(eb.selectFrom('accounts as other').select('other.id').where('other.email', '=', email)))),
      );
      if (changed === 0) throw (await this.findById(id, unit)) ? emailInUse('newEmail') : new AppError('not_found', 'Account not found.');
    } catch (error) {
      // PostgreSQL: two accounts moving to one address at once; the second meets the unique index.
      throw isUniqueViolation(error) ? emailInUse('newEmail') : error;
    }
  }

  setPasswordHash(unit: Unit, id: string, passwordHash: string): Promise<number> {
    return executorOf(unit).run(this.db.updateTable('accounts').set({ password_hash: passwordHash }).where('id', '=', id));
  }

  async count(): Promise<number> {
    const row = await this.store.read.first(this.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')));
    return Number(row?.n ?? 0);
  }

  async first(): Promise<Account | undefined> {
    const row = await this.store.read.first(this.db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').limit(1));
    return row && toAccount(row);
  }

  async page(o: { limit: number; afterEmail?: string; contains?: string }): Promise<Account[]> {
    let query = this.db.selectFrom('accounts').selectAll().orderBy('email').limit(o.limit);
    if (o.afterEmail !== undefined) query = query.where('email', '>', o.afterEmail);
    // Addresses are stored lower-case, as the service passes the piece.
    if (o.contains) query = query.where(likeContains('email', o.contains));
    return (await this.store.read.all(query)).map(toAccount);
  }
}

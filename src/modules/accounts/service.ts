import { hash, verify } from '@node-rs/argon2';
import { AppError, invalidRequest } from '../../core/errors.ts';
import { canonicalEmail, normalizeEmail } from '../../core/email.ts';
import { newAccountId } from '../../core/ids.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';

export type Plan = 'free' | 'plus';
export const PLANS: readonly Plan[] = ['free', 'plus'];

export interface Account {
  id: string;
  email: string;
  passwordHash: string;
  plan: Plan;
  createdAt: number;
}

export interface AccountRepository {
  insert(unit: Unit, account: Account): Promise<void>;
  /** Inserts `account` only while there is no account at all (atomic, across processes); false when one exists. */
  insertFirst(unit: Unit, account: Account): Promise<boolean>;
  findByEmail(email: string): Promise<Account | undefined>;
  findById(id: string, unit?: Unit): Promise<Account | undefined>;
  setPlan(unit: Unit, id: string, plan: Plan): Promise<number>;
  /** Moves the account to `email` (canonical); throws `emailInUse` when another account has it. */
  setEmail(unit: Unit, id: string, email: string): Promise<void>;
  setPasswordHash(unit: Unit, id: string, passwordHash: string): Promise<number>;
  count(): Promise<number>;
  /** The installation's first account (the earliest created): its instance administrator. */
  first(): Promise<Account | undefined>;
  /** Accounts by e-mail address, `limit` of them after `afterEmail`, optionally those whose address contains `contains`. */
  page(o: { limit: number; afterEmail?: string; contains?: string }): Promise<Account[]>;
}

/** decisions.md (operator dashboard): passwords of at least 10 characters, wherever an account gets one. */
export const MIN_PASSWORD = 10;
const MAX_PASSWORD = 1024;

/** Throws the one password rule's error (`path` names the form field). */
export function checkPassword(password: string, path = 'password'): void {
  if (password.length < MIN_PASSWORD) throw invalidRequest(path, `must be at least ${MIN_PASSWORD} characters`);
  if (password.length > MAX_PASSWORD) throw invalidRequest(path, `must be at most ${MAX_PASSWORD} characters`);
}

/** An address is one account's log-in name: another account may not take it. */
export const emailInUse = (path = 'email'): AppError =>
  new AppError('invalid_request', 'An account with this e-mail already exists.', [{ path, message: 'already in use' }]);

/** Verified against when the address is unknown, so a failed log-in takes as long either way. */
let decoyHash: Promise<string> | undefined;

/** Operator accounts: each owns its products, licenses and API keys (the tenant boundary). */
export class AccountService {
  constructor(
    private readonly repo: AccountRepository,
    private readonly units: UnitRunner,
    private readonly clock: () => number = Date.now,
  ) {}

  async create(input: { email: string; password: string; plan?: string }): Promise<Account> {
    const account = await this.newAccount(input);
    await this.units.run((unit) => this.repo.insert(unit, account));
    return account;
  }

  /**
   * The installation's first account (the dashboard's first-run setup): created only while no
   * account exists, so two setups racing each other make one account, never two.
   */
  async createFirst(input: { email: string; password: string }): Promise<Account> {
    const account = await this.newAccount(input);
    if (!(await this.units.run((unit) => this.repo.insertFirst(unit, account)))) throw new AppError('not_found', 'The dashboard is already set up.');
    return account;
  }

  /** Checks the input and hashes the password (outside any unit: it takes a while). */
  private async newAccount(input: { email: string; password: string; plan?: string }): Promise<Account> {
    const email = canonicalEmail(input.email);
    if (!email) throw invalidRequest('email', 'must be a valid e-mail address');
    checkPassword(input.password);
    const plan = (input.plan ?? 'free') as Plan;
    if (!PLANS.includes(plan)) throw invalidRequest('plan', `must be one of ${PLANS.join(', ')}`);
    if (await this.repo.findByEmail(email)) throw emailInUse();
    // argon2id with the library's defaults (19 MiB, t=2), the OWASP baseline.
    return { id: newAccountId(), email, passwordHash: await hash(input.password), plan, createdAt: this.clock() };
  }

  /** The account when the password is right; an unknown address costs the same argon2 verify (no timing oracle). */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    const account = await this.repo.findByEmail(normalizeEmail(email));
    if (!account) {
      decoyHash ??= hash('tessera decoy password');
      await verify(await decoyHash, password);
      return undefined;
    }
    return (await verify(account.passwordHash, password)) ? account : undefined;
  }

  /** Sets a new password, in the caller's unit (the dashboard ends the account's sessions in the same one). */
  async setPassword(unit: Unit, id: string, passwordHash: string): Promise<void> {
    if ((await this.repo.setPasswordHash(unit, id, passwordHash)) === 0) throw new AppError('not_found', 'Account not found.');
  }

  /** The argon2id hash of a new password that meets the rule (computed outside any unit: it takes a while). */
  async hashNewPassword(password: string, path = 'password'): Promise<string> {
    checkPassword(password, path);
    return hash(password);
  }

  /** Moves the account to a new address in the caller's unit (the dashboard's links and notices go with it). */
  setEmail(unit: Unit, id: string, email: string): Promise<void> {
    return this.repo.setEmail(unit, id, email);
  }

  async setPlan(email: string, plan: string): Promise<Account> {
    if (!PLANS.includes(plan as Plan)) throw invalidRequest('plan', `must be one of ${PLANS.join(', ')}`);
    const account = await this.requireByEmail(email);
    await this.units.run((unit) => this.repo.setPlan(unit, account.id, plan as Plan));
    return { ...account, plan: plan as Plan };
  }

  async requireByEmail(email: string): Promise<Account> {
    const account = await this.repo.findByEmail(normalizeEmail(email));
    if (!account) throw new AppError('not_found', 'No account with this e-mail.');
    return account;
  }

  findByEmail(email: string): Promise<Account | undefined> {
    return this.repo.findByEmail(normalizeEmail(email));
  }

  findById(id: string, unit?: Unit): Promise<Account | undefined> {
    return this.repo.findById(id, unit);
  }

  count(): Promise<number> {
    return this.repo.count();
  }

  /**
   * Whether the account administers this installation: the first account, made at setup (or the
   * first made by the CLI). It sees every account and sets their plans, as the CLI's operator does.
   */
  async isAdministrator(accountId: string): Promise<boolean> {
    return (await this.repo.first())?.id === accountId;
  }

  /** Every account, for the administrator: a page by e-mail address, a piece of the address as a filter. */
  async pageForAdministrator(adminId: string, o: { limit: number; afterEmail?: string; contains?: string }): Promise<Account[]> {
    await this.requireAdministrator(adminId);
    return this.repo.page({ ...o, contains: o.contains?.trim().toLowerCase() || undefined });
  }

  /** The administrator sets an account's plan (the CLI's `account set-plan`, from the dashboard). */
  async setPlanAsAdministrator(adminId: string, accountId: string, plan: string): Promise<Account> {
    await this.requireAdministrator(adminId);
    const account = await this.repo.findById(accountId);
    if (!account) throw new AppError('not_found', 'Account not found.');
    return this.setPlan(account.email, plan);
  }

  /** Anyone else is told there is nothing here, as for another tenant's object. */
  private async requireAdministrator(accountId: string): Promise<void> {
    if (!(await this.isAdministrator(accountId))) throw new AppError('not_found', 'Not found.');
  }
}

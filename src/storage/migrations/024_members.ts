import { type Kysely, sql } from 'kysely';

/**
 * Members of an account (decisions.md, "Operators: teams and security"). The account's own sign-in
 * (its e-mail and password, made by the CLI or the first-run setup) is its first owner and stays in
 * `accounts`: that owner's member id is the account's id, so audit entries from before, which name
 * the account as `userId`, name that owner. Everyone invited since is a row of `members`.
 *
 * - `members`: one sign-in each; `email` is unique across members (and the code keeps it apart from
 *   accounts' addresses: a sign-in address names one person).
 * - `member_invitations`: single-use links valid 7 days; only the SHA-256 hash of the secret.
 * - `dashboard_sessions.member_id`: whose session it is (sessions from before: the account's owner).
 * - Two-factor sign-in, per member (by member id: the first owner's is the account's id, so no
 *   foreign key to `members`; the account's cascade and a member's removal clear them):
 *   `two_factor` (the TOTP secret sealed with SECRET_KEY, `enabled_at` null while enrolling,
 *   `last_step` the last accepted time step: a code works once), `two_factor_recovery_codes` (SHA-256
 *   of each code, `used_at` once used), `two_factor_required` (an owner's switch, per account), and
 *   `sign_in_challenges` (a password accepted, a code awaited: 5 minutes, 5 attempts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('members')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('members_account_idx').on('members').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('member_invitations')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('invited_by', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('member_invitations_account_idx').on('member_invitations').columns(['account_id', 'email']).execute();

  await db.schema.alterTable('dashboard_sessions').addColumn('member_id', 'text').execute();
  await db.updateTable('dashboard_sessions').set({ member_id: sql.ref('account_id') }).execute();
  await db.schema.createIndex('dashboard_sessions_member_idx').on('dashboard_sessions').column('member_id').execute();

  await db.schema
    .createTable('two_factor')
    .addColumn('member_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('enabled_at', 'bigint')
    .addColumn('last_step', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('two_factor_recovery_codes')
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('used_at', 'bigint')
    .addPrimaryKeyConstraint('two_factor_recovery_codes_pk', ['member_id', 'code_hash'])
    .execute();
  await db.schema
    .createTable('two_factor_required')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sign_in_challenges')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['sign_in_challenges', 'two_factor_required', 'two_factor_recovery_codes', 'two_factor']) await db.schema.dropTable(table).execute();
  await db.schema.dropIndex('dashboard_sessions_member_idx').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('member_id').execute();
  await db.schema.dropTable('member_invitations').execute();
  await db.schema.dropTable('members').execute();
}

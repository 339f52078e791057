import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type Config, loadConfig } from './config.ts';
import { AppError } from './core/errors.ts';
import { importLicenseFile } from './modules/licenses/import-file.ts';
import { createServices, type Services } from './services.ts';
import { backupSqlite, restoreSqlite } from './storage/backup.ts';
import { openStore } from './storage/index.ts';
import { parseTimestamp, toIso, toIsoOrNull } from './core/time.ts';
import { cliPrincipal } from './core/principal.ts';
import type { Account } from './modules/accounts/service.ts';

const USAGE = `Usage: npm run --silent cli -- <command>
  account create --email E --password P [--plan free|plus]
  account set-plan --email E --plan free|plus
  account set-email --email E --new-email N   (at once; the old address gets a notice)
  api-key create --email E [--name N] [--scope full|read|licenses] [--expires-at DATE]
  api-key list --email E
  api-key revoke --email E --id KEY_ID
  import --email OWNER --file FILE [--format csv|json] [--dry-run]
      licenses with their keys and devices, from CSV or JSON (docs/migrating.md)
  backup --to FILE          a consistent copy of the SQLite store, also while the server runs
  restore --from FILE       replaces the SQLite store with a backup (stop the server first)
  help, --help, -h          this text
Each command prints one JSON object on stdout. PostgreSQL: pg_dump / pg_restore (docs/operations.md).
Settings come from the environment (DATA_DIR, DATABASE_URL, SECRET_KEY...): docs/getting-started.md.`;

type Options = { email?: string; scope?: string; 'expires-at'?: string; 'new-email'?: string; password?: string; plan?: string; name?: string; id?: string; file?: string; format?: string; 'dry-run'?: boolean; to?: string; from?: string };

/** A command's answer; `failed` makes the exit code 1 (the answer still goes to stdout). */
type Answer = object & { failed?: boolean };

function need(options: Options, name: 'email' | 'new-email' | 'password' | 'plan' | 'id' | 'file' | 'to' | 'from'): string {
  const value = options[name];
  if (!value) throw new AppError('invalid_request', `--${name} is required.`);
  return value;
}

/** An account as the CLI prints it; `userId` is its wire name (decisions.md, "Accounts and API keys"). */
const accountAnswer = (a: Account) => ({ userId: a.id, email: a.email, plan: a.plan });

const commands: Record<string, (s: Services, o: Options) => Promise<Answer>> = {
  'account create': async (s, o) => accountAnswer(await s.accounts.create({ email: need(o, 'email'), password: need(o, 'password'), plan: o.plan })),
  'account set-plan': async (s, o) => accountAnswer(await s.accounts.setPlan(need(o, 'email'), need(o, 'plan'))),
  'account set-email': async (s, o) => accountAnswer(await s.dashboard.setEmail(need(o, 'email'), need(o, 'new-email'))),
  'api-key create': async (s, o) => {
    const account = await s.accounts.requireByEmail(need(o, 'email'));
    const expiresAt = o['expires-at'] === undefined ? null : parseTimestamp(o['expires-at'], 'expires-at');
    const { key, secret } = await s.apiKeys.create(cliPrincipal(account.id), o.name, { scope: o.scope, expiresAt });
    return { id: key.id, apiKey: secret };
  },
  'api-key list': async (s, o) => {
    const account = await s.accounts.requireByEmail(need(o, 'email'));
    const keys = await s.apiKeys.list(cliPrincipal(account.id));
    return {
      data: keys.map((k) => ({
        id: k.id,
        name: k.name,
        prefix: k.keyPrefix,
        scope: k.scope,
        expiresAt: toIsoOrNull(k.expiresAt),
        createdAt: toIso(k.createdAt),
        lastUsedAt: toIsoOrNull(k.lastUsedAt),
        revokedAt: toIsoOrNull(k.revokedAt),
      })),
    };
  },
  'api-key revoke': async (s, o) => {
    const account = await s.accounts.requireByEmail(need(o, 'email'));
    await s.apiKeys.revoke(cliPrincipal(account.id), need(o, 'id'));
    return { id: o.id, revoked: true };
  },
  import: async (s, o) => {
    const file = need(o, 'file');
    const format = o.format ?? (file.toLowerCase().endsWith('.json') ? 'json' : 'csv');
    if (format !== 'csv' && format !== 'json') throw new AppError('invalid_request', '--format must be csv or json.');
    const account = await s.accounts.requireByEmail(need(o, 'email'));
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new AppError('invalid_request', `Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}.`);
    }
    const report = await importLicenseFile(s.licenses, cliPrincipal(account.id), text, format, { dryRun: o['dry-run'] });
    return { ...report, failed: !report.ok };
  },
};

/** Commands on the SQLite file itself, run without opening the store (no migrations, no services). */
const fileCommands: Record<string, (config: Config, o: Options) => Promise<object>> = {
  backup: (config, o) => backupSqlite(sqliteDir(config), need(o, 'to')),
  restore: (config, o) => restoreSqlite(sqliteDir(config), need(o, 'from')),
};

function sqliteDir(config: Config): string {
  if (config.databaseUrl) throw new AppError('invalid_request', 'DATABASE_URL is set: back up PostgreSQL with pg_dump and restore with pg_restore (docs/operations.md).');
  return config.dataDir;
}

function fail(error: unknown): number {
  if (!(error instanceof AppError)) throw error;
  process.stderr.write(`${JSON.stringify({ error: { code: error.code, message: error.message, issues: error.issues } })}\n`);
  return 1;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      'new-email': { type: 'string' },
      password: { type: 'string' },
      plan: { type: 'string' },
      name: { type: 'string' },
      scope: { type: 'string' },
      'expires-at': { type: 'string' },
      id: { type: 'string' },
      file: { type: 'string' },
      format: { type: 'string' },
      'dry-run': { type: 'boolean' },
      to: { type: 'string' },
      from: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const name = positionals.join(' ');
  // Asked for, usage is the answer (stdout, exit 0); only an unknown command is a usage error (stderr, exit 2).
  if (values.help || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Own properties only: never Object.prototype's (`cli -- toString`).
  const fileCommand = Object.hasOwn(fileCommands, name) ? fileCommands[name] : undefined;
  if (fileCommand) {
    try {
      process.stdout.write(`${JSON.stringify(await fileCommand(loadConfig(), values))}\n`);
      return 0;
    } catch (error) {
      return fail(error);
    }
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    const { failed, ...result } = await command(createServices(store, config.secretKey, undefined, { baseUrl: config.baseUrl }), values);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return failed ? 1 : 0;
  } catch (error) {
    return fail(error);
  } finally {
    await store.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

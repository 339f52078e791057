import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, forEachStore, type TestDatabase } from '../support/stores.ts';
import { runCli } from '../support/server-process.ts';

forEachStore('operator CLI', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(() => db.drop());

  it('creates an account and API keys, lists and revokes them, each as one JSON object', async () => {
    const account = await runCli(db.env, ['account', 'create', '--email', 'Owner@Example.com', '--password', 'long enough password', '--plan', 'plus']);
    expect(account.code).toBe(0);
    expect(account.json).toEqual({ userId: expect.stringMatching(/^[0-9a-f-]{36}$/), email: 'owner@example.com', plan: 'plus' });

    const key = await runCli(db.env, ['api-key', 'create', '--email', 'owner@example.com', '--name', 'ci']);
    expect(key.json).toEqual({ id: expect.stringMatching(/^key_/), apiKey: expect.stringMatching(/^sk_[A-Za-z0-9]{40}$/) });

    const list = await runCli(db.env, ['api-key', 'list', '--email', 'owner@example.com']);
    expect(list.json.data).toEqual([
      { id: key.json.id, name: 'ci', prefix: key.json.apiKey.slice(0, 7), scope: 'full', expiresAt: null, createdAt: expect.any(String), lastUsedAt: null, revokedAt: null },
    ]);
    expect(JSON.stringify(list.json)).not.toContain(key.json.apiKey);

    const scoped = await runCli(db.env, ['api-key', 'create', '--email', 'owner@example.com', '--name', 'reports', '--scope', 'read', '--expires-at', '2999-01-31']);
    expect(scoped.code).toBe(0);
    const listed = (await runCli(db.env, ['api-key', 'list', '--email', 'owner@example.com'])).json.data;
    expect(listed.find((k: { id: string }) => k.id === scoped.json.id)).toMatchObject({ name: 'reports', scope: 'read', expiresAt: '2999-01-31T00:00:00.000Z' });
    const badScope = await runCli(db.env, ['api-key', 'create', '--email', 'owner@example.com', '--scope', 'admin']);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain('"path":"scope"');
    await runCli(db.env, ['api-key', 'revoke', '--email', 'owner@example.com', '--id', scoped.json.id]);

    const revoked = await runCli(db.env, ['api-key', 'revoke', '--email', 'owner@example.com', '--id', key.json.id]);
    expect(revoked.json).toEqual({ id: key.json.id, revoked: true });
    const after = await runCli(db.env, ['api-key', 'list', '--email', 'owner@example.com']);
    expect(after.json.data.filter((k: { id: string }) => k.id === key.json.id)).toEqual([{ ...list.json.data[0], revokedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) }]);
    expect(Date.parse(after.json.data[0].revokedAt)).toBeGreaterThanOrEqual(Date.parse(after.json.data[0].createdAt));

    const plan = await runCli(db.env, ['account', 'set-plan', '--email', 'owner@example.com', '--plan', 'free']);
    expect(plan.json.plan).toBe('free');

    const moved = await runCli(db.env, ['account', 'set-email', '--email', 'owner@example.com', '--new-email', 'New.Owner@Example.com']);
    expect(moved.code).toBe(0);
    expect(moved.json).toEqual({ userId: account.json.userId, email: 'new.owner@example.com', plan: 'free' });
    // Both keys made above (the full one and the scoped one, each revoked since) follow the account.
    expect((await runCli(db.env, ['api-key', 'list', '--email', 'new.owner@example.com'])).json.data).toHaveLength(2);
    expect((await runCli(db.env, ['api-key', 'list', '--email', 'owner@example.com'])).code).toBe(1);
  }, 60_000);

  it('fails with a JSON error and exit 1 on bad input, and usage with exit 2', async () => {
    const dup = await runCli(db.env, ['account', 'create', '--email', 'dup@example.com', '--password', 'long enough password']);
    expect(dup.code).toBe(0);
    const again = await runCli(db.env, ['account', 'create', '--email', 'DUP@example.com', '--password', 'long enough password']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr).error.code).toBe('invalid_request');
    const short = await runCli(db.env, ['account', 'create', '--email', 'x@example.com', '--password', 'short']);
    expect(short.code).toBe(1);
    const noAccount = await runCli(db.env, ['api-key', 'create', '--email', 'nobody@example.com']);
    expect(JSON.parse(noAccount.stderr).error.code).toBe('not_found');
    const taken = await runCli(db.env, ['account', 'set-email', '--email', 'x@example.com', '--new-email', 'dup@example.com']);
    expect(JSON.parse(taken.stderr).error.code).toBe('not_found');
    await runCli(db.env, ['account', 'create', '--email', 'mover@example.com', '--password', 'long enough password']);
    const inUse = await runCli(db.env, ['account', 'set-email', '--email', 'mover@example.com', '--new-email', 'DUP@example.com']);
    expect(inUse.code).toBe(1);
    expect(JSON.parse(inUse.stderr).error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'newEmail', message: 'already in use' }] });
    const bad = await runCli(db.env, ['account', 'set-email', '--email', 'mover@example.com', '--new-email', 'not an address']);
    expect(JSON.parse(bad.stderr).error.issues).toEqual([{ path: 'newEmail', message: 'must be a valid e-mail address' }]);
    expect(JSON.parse((await runCli(db.env, ['account', 'set-email', '--email', 'mover@example.com'])).stderr).error.message).toBe('--new-email is required.');
    const usage = await runCli(db.env, ['frobnicate']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('Usage');
  }, 60_000);

  it('answers help, --help and -h with the usage of every command on stdout and exit 0', async () => {
    for (const args of [['help'], ['--help'], ['-h'], ['account', 'create', '--help']]) {
      const help = await runCli(db.env, args);
      expect(help.code, args.join(' ')).toBe(0);
      expect(help.stdout).toMatch(/^Usage: npm run --silent cli -- <command>/);
      for (const command of ['account create', 'account set-plan', 'api-key create', 'api-key revoke', 'import', 'backup', 'restore']) expect(help.stdout).toContain(command);
      expect(help.stderr).toBe('');
    }
  }, 60_000);
});

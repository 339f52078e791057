import { afterAll, beforeAll, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/core/ids.ts';
import { SqlAuditRepository } from '../../src/modules/audit/repository.ts';
import type { Store } from '../../src/storage/index.ts';
import { queryPlan } from '../support/query-plan.ts';
import { createDatabaseAt, forEachStore, type TestDatabase } from '../support/stores.ts';

const NOW = Date.now();
const KEY = 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE';


// The audit log's per-license index loses the account (a license key is unique across accounts).
forEachStore('migration 010: the per-license audit index by license key and id', (kind) => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    const entry = (user: string, key: string, at: number) => ({ id: timeOrderedId(at), user_id: user, license_key: key, type: 'device.activated', actor: '{"type":"public"}', changes: null, created_at: at });
    database = await createDatabaseAt(kind, '009_hardening', (db) =>
      db.insertInto('audit_events').values([entry('u1', KEY, NOW - 3000), entry('u1', 'OTHER-KEY', NOW - 2000), entry('u1', KEY, NOW - 1000)]).execute(),
    );
    store = await database.open(); // runs migration 010
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('entries written before it list as before: newest first, by license, only for their account', async () => {
    const repo = new SqlAuditRepository(store);
    const listed = await repo.list('u1', { licenseKey: KEY }, { limit: 10, since: 0 });
    expect(listed.map((e) => e.createdAt)).toEqual([NOW - 1000, NOW - 3000]);
    expect(await repo.list('u1', { licenseKey: KEY }, { limit: 10, before: listed[0]!.id, since: 0 })).toHaveLength(1);
    expect(await repo.list('u2', { licenseKey: KEY }, { limit: 10, since: 0 })).toEqual([]);
  });

  it('a page is read through the new index in its order: no scan, no sort', async () => {
    const repo = new SqlAuditRepository(store);
    for (const before of [undefined, timeOrderedId(NOW)]) {
      const text = await queryPlan(store, repo.listQuery('u1', { licenseKey: KEY }, { limit: 51, before }).compile());
      if (kind === 'sqlite') {
        expect(text).toMatch(/SEARCH audit_events USING INDEX audit_events_license_idx \(license_key=\?/);
        expect(text).not.toMatch(/SCAN audit_events|USE TEMP B-TREE/);
      } else {
        expect(text).toMatch(/Index Scan Backward using audit_events_license_idx/);
        expect(text).not.toMatch(/Seq Scan|Sort/);
      }
    }
  });
});

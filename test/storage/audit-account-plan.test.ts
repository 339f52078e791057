import { afterAll, beforeAll, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/core/ids.ts';
import { SqlAuditRepository } from '../../src/modules/audit/repository.ts';
import type { AuditScope } from '../../src/modules/audit/service.ts';
import type { Store } from '../../src/storage/index.ts';
import { queryPlan } from '../support/query-plan.ts';
import { createTestDatabase, forEachStore, type TestDatabase } from '../support/stores.ts';

const NOW = 1_700_000_000_000;
const KEY = 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE';

/** The account-wide log (migration 019) and the per-license one, each read through its own index in its order. */
forEachStore('audit log plans', (kind) => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    database = await createTestDatabase(kind);
    store = await database.open();
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  const SCOPES: [string, AuditScope, { sqlite: RegExp; postgres: RegExp }][] = [
    ['account', {}, { sqlite: /SEARCH audit_events USING INDEX audit_events_account_idx \(account_id=\?/, postgres: /Index Scan Backward using audit_events_account_idx/ }],
    ['account, one type', { type: 'license.revoked' }, { sqlite: /SEARCH audit_events USING INDEX audit_events_account_type_idx \(account_id=\? AND type=\?/, postgres: /Index Scan Backward using audit_events_account_type_idx/ }],
    ['one license', { licenseKey: KEY }, { sqlite: /SEARCH audit_events USING INDEX audit_events_license_idx \(license_key=\?/, postgres: /Index Scan Backward using audit_events_license_idx/ }],
  ];

  it('pages the log through the index of its scope, newest first: no scan, no sort', async () => {
    const repo = new SqlAuditRepository(store);
    for (const [name, scope, expected] of SCOPES) {
      for (const before of [undefined, timeOrderedId(NOW)]) {
        const text = await queryPlan(store, repo.listQuery('acc', scope, { limit: 51, before }).compile());
        expect(text, name).toMatch(expected[kind]);
        expect(text, name).not.toMatch(/SCAN audit_events|USE TEMP B-TREE|Seq Scan|Sort/);
      }
    }
  });

  it("pages the activations devices hold by activation across the account, and by the license's own rows for one license", async () => {
    const repo = new SqlAuditRepository(store);
    const account = await queryPlan(store, repo.heldQuery('acc', {}, { limit: 51, since: NOW - 1000 }).compile());
    const license = await queryPlan(store, repo.heldQuery('acc', { licenseKey: KEY }, { limit: 51, since: NOW - 1000 }).compile());
    if (kind === 'sqlite') {
      expect(account).toMatch(/SEARCH d USING INDEX devices_activation_idx \(activation_id>\?\)\nSEARCH l USING COVERING INDEX licenses_account_key_idx \(account_id=\? AND key=\?\)/);
      expect(license).toMatch(/SEARCH d USING PRIMARY KEY \(license_key=\?/);
    } else {
      // (With sorts priced out, PostgreSQL's plan for one license says nothing: its few devices are sorted.)
      expect(account).toMatch(/Index Scan Backward using devices_activation_idx/);
    }
    expect(account).not.toMatch(/SCAN d\b|USE TEMP B-TREE|Seq Scan|Sort/);
  });
});

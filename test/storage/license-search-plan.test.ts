import { describe, expect, it } from 'vitest';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import type { LicenseFilter } from '../../src/modules/licenses/types.ts';
import { queryPlan } from '../support/query-plan.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';

/** Every filter of the dashboard's license list, first page and next page. */
const FILTERS: [string, LicenseFilter][] = [
  ['all', {}],
  ['product', { productId: 'p_x' }],
  ['e-mail', { email: 'a@example.com' }],
  ['key prefix', { keyPrefix: 'ABCDE-F' }],
  ['active', { status: 'active' }],
  ['expired', { status: 'expired' }],
  ['revoked', { status: 'revoked' }],
];


forEachStore('license search plans', (kind) => {
  describe('every filter of the dashboard list', () => {
    it('reads through an index in its order: no table scan and no sort of the whole account', async () => {
      const database = await createTestDatabase(kind);
      const store = await database.open();
      try {
        const repo = new SqlLicenseRepository(store);
        for (const [name, filter] of FILTERS) {
          for (const after of [undefined, { sort: filter.keyPrefix ? null : 1_700_000_000_000, key: 'K' }]) {
            const text = await queryPlan(store, repo.searching.searchQuery('u', filter, 1_700_000_000_000, { limit: 51, after }).compile());
            if (kind === 'sqlite') {
              expect(text, name).toMatch(/SEARCH licenses USING (COVERING )?INDEX/);
              expect(text, name).not.toMatch(/SCAN licenses|USE TEMP B-TREE FOR ORDER BY/);
              // A next page starts at the cursor in the index (a range bound), not at the top.
              if (after) expect(text, name).toMatch(/account_id=\? AND .*(\((created_at|expires_at),key\)|key)[<>]/);
            } else {
              expect(text, name).toMatch(/Index (Only )?Scan/);
              expect(text, name).not.toMatch(/Seq Scan|Sort/);
              if (after) expect(text, name).toMatch(/Index Cond: .*(ROW\(|key > )/);
            }
          }
        }
      } finally {
        await store.close();
        await database.drop();
      }
    });
  });
});

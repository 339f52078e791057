import { describe, expect, it } from 'vitest';
import { SqlLicenseRepository } from '../../src/modules/licenses/repository.ts';
import type { LicenseFilter } from '../../src/modules/licenses/types.ts';
import type { Store } from '../../src/storage/index.ts';
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

async function plan(store: Store, query: { sql: string; parameters: readonly unknown[] }): Promise<string> {
  if (store.dialect === 'sqlite') {
    const rows = await store.read.all<{ detail: string }>({ sql: `EXPLAIN QUERY PLAN ${query.sql}`, parameters: query.parameters });
    return rows.map((r) => r.detail).join('\n');
  }
  // Scans, bitmaps and sorts priced out: a plain index scan in the page's order is chosen whenever
  // one exists, even on an empty table (whose statistics would make any plan look cheap).
  return store.write(async (tx) => {
    for (const setting of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await tx.run({ sql: `SET LOCAL ${setting} = off`, parameters: [] });
    const rows = await tx.all<{ 'QUERY PLAN': string }>({ sql: `EXPLAIN ${query.sql}`, parameters: query.parameters });
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

forEachStore('license search plans', (kind) => {
  describe('every filter of the dashboard list', () => {
    it('reads through an index in its order: no table scan and no sort of the whole account', async () => {
      const database = await createTestDatabase(kind);
      const store = await database.open();
      try {
        const repo = new SqlLicenseRepository(store);
        for (const [name, filter] of FILTERS) {
          for (const after of [undefined, { sort: filter.keyPrefix ? null : 1_700_000_000_000, key: 'K' }]) {
            const text = await plan(store, repo.searchQuery('u', filter, 1_700_000_000_000, { limit: 51, after }).compile());
            if (kind === 'sqlite') {
              expect(text, name).toMatch(/SEARCH licenses USING (COVERING )?INDEX/);
              expect(text, name).not.toMatch(/SCAN licenses|USE TEMP B-TREE FOR ORDER BY/);
              // A next page starts at the cursor in the index (a range bound), not at the top.
              if (after) expect(text, name).toMatch(/user_id=\? AND .*(\((created_at|expires_at),key\)|key)[<>]/);
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

import type { Store } from '../../src/storage/index.ts';

/**
 * The store's plan for a compiled query, as text. On PostgreSQL, scans, bitmaps and sorts are
 * priced out: a plain index scan in the query's order is chosen whenever one exists, even on an
 * empty table (whose statistics would make any plan look cheap).
 */
export async function queryPlan(store: Store, query: { sql: string; parameters: readonly unknown[] }): Promise<string> {
  if (store.dialect === 'sqlite') {
    const rows = await store.read.all<{ detail: string }>({ sql: `EXPLAIN QUERY PLAN ${query.sql}`, parameters: query.parameters });
    return rows.map((r) => r.detail).join('\n');
  }
  return store.write(async (tx) => {
    for (const setting of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await tx.run({ sql: `SET LOCAL ${setting} = off`, parameters: [] });
    const rows = await tx.all<{ 'QUERY PLAN': string }>({ sql: `EXPLAIN ${query.sql}`, parameters: query.parameters });
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

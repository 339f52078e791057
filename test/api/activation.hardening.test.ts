import { afterEach, describe, expect, it, vi } from 'vitest';
import { TokenSigner } from '../../src/modules/license-tokens/signer.ts';
import type { Executor, Store } from '../../src/storage/index.ts';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { configureTokens, publicActivate } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

const DEVICES = 10_000;

/** The SQL of a statement: a Kysely builder or a prepared, bound one. */
const sqlOf = (q: unknown): string => ('compile' in (q as object) ? (q as { compile(): { sql: string } }).compile().sql : (q as { sql: string }).sql);

/** Records every statement run inside units of `store` from now on, with the rows it returned. */
function recordUnits(store: Store) {
  const seen: { sql: string; rows: number }[] = [];
  const write = store.write.bind(store);
  const spy = vi.spyOn(store, 'write').mockImplementation((work) =>
    write((tx: Executor) =>
      work({
        all: async (q) => {
          const rows = await tx.all(q);
          seen.push({ sql: sqlOf(q), rows: rows.length });
          return rows;
        },
        first: async (q) => {
          const row = await tx.first(q);
          seen.push({ sql: sqlOf(q), rows: row === undefined ? 0 : 1 });
          return row;
        },
        run: (q) => tx.run(q),
      } as Executor),
    ),
  );
  return { seen, restore: () => spy.mockRestore() };
}

forEachStore('activation hardening', (kind) => {
  const ctx = useTestApp(kind);
  afterEach(() => vi.restoreAllMocks());

  describe(`a license with ${DEVICES} devices (issue 14, item 5)`, () => {
    it('activates reading one device row and a count, never the device list, and keeps maxDevices exact', async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      const l = await createLicense(ctx, t, p.id, { maxDevices: DEVICES + 1 });
      const rows = Array.from({ length: DEVICES }, (_, i) => ({ license_key: l.key, identifier: `seed-${i}`, name: 'n', activation_date: 1_700_000_000_000 + i }));
      await ctx.store.write(async (tx) => {
        for (let i = 0; i < rows.length; i += 500) await tx.run(ctx.store.db.insertInto('devices').values(rows.slice(i, i + 500)));
      });
      const activate = (id: string) => call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier: id, deviceName: 'n' } });

      const recorder = recordUnits(ctx.store);
      expect((await activate('new-1')).status).toBe(200);
      const reactivated = await activate('seed-42');
      expect(reactivated.status).toBe(200);
      expect(reactivated.body.device.activationDate).toBe(new Date(1_700_000_000_042).toISOString());
      recorder.restore();
      // Whatever the device count, no statement in an activation's unit reads more than one row: the
      // locked license, its asking device with the count of its devices (one statement with the
      // license where rows are not locked, SQLite), and the event subscribers' lookups (the account's
      // webhook endpoints: none here).
      expect(recorder.seen.length).toBeGreaterThanOrEqual(ctx.store.lockRows ? 4 : 3);
      expect(recorder.seen.filter((s) => s.rows > 1)).toEqual([]);
      // The activations' counts of devices (SQLite's search indexer may run a count of its own in the window).
      expect(recorder.seen.filter((s) => /count\(\*\)/i.test(s.sql) && /from "devices"/i.test(s.sql))).toHaveLength(2);

      const full = await activate('new-2');
      expect(full.status).toBe(400);
      expect(full.body.error.code).toBe('max_devices_reached');
      const count = await ctx.store.read.first(ctx.store.db.selectFrom('devices').select((eb) => eb.fn.countAll().as('n')).where('license_key', '=', l.key));
      expect(Number(count!.n)).toBe(DEVICES + 1);
      // The server API still answers the whole device list (wire-compatible), read after the write.
      const server = await call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...t.auth, 'license-key': l.key }, json: { productId: p.id, device: { identifier: 'seed-0', name: 'renamed' } } });
      expect(server.status).toBe(200);
      expect(server.body.activeDevices).toHaveLength(DEVICES + 1);
      expect(server.body.activeDevices[0]).toMatchObject({ identifier: 'seed-0', name: 'renamed', activationDate: new Date(1_700_000_000_000).toISOString(), leaseExpiresAt: null });
    }, 60_000);
  });

  describe('activation and its token in one outcome (issue 14, item 9)', () => {
    it('a signing failure answers 500 and keeps no device slot; the next try gets its slot and token', async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      await configureTokens(ctx, t, p.id);
      const l = await createLicense(ctx, t, p.id, { maxDevices: 1 });
      const sign = vi.spyOn(TokenSigner.prototype, 'sign').mockImplementationOnce(() => {
        throw new Error('HSM unavailable');
      });
      const failed = await publicActivate(ctx, l.key, p.id, 'dev-1');
      expect(failed.status).toBe(500);
      expect(failed.body.error.code).toBe('internal_error');
      expect(sign).toHaveBeenCalledTimes(1);
      const stored = await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': l.key } });
      expect(stored.body.activeDevices).toEqual([]);
      // The slot is free: another device can take it, and gets a token.
      const next = await publicActivate(ctx, l.key, p.id, 'dev-2');
      expect(next.status).toBe(200);
      expect(typeof next.body.token).toBe('string');
    });
  });
});

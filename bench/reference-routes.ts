import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Kysely, SqliteDialect } from 'kysely';
import { licenseStatements } from '../src/modules/licenses/repository.ts';
import { PublicLicenseQuery, PublicValidationResult } from '../src/modules/public/schemas.ts';
import type { Database } from '../src/storage/schema.ts';
import { SQLITE_MMAP_DEFAULT } from '../src/storage/sqlite.ts';
import { openSqlite } from '../src/storage/sqlite-binding.ts';

/**
 * Two reference routes that show how far public validate can go on this machine, measured with the
 * same requests as the service's route, on the seeded SQLite store in `dataDir`:
 * - `POST /reference/answer`: the service route's body and response schemas, and nothing behind
 *   them (a fixed valid answer). Fastify's cost for this POST; the service can only be slower.
 * - `POST /reference/lookup`: the same plus the service's own validation statement, run directly
 *   on SQLite's binding: one indexed lookup with none of the service's layers around it.
 */
export function addReferenceRoutes(app: FastifyInstance, dataDir: string): void {
  const conn = openSqlite(join(dataDir, 'tessera.db'), { readonly: true });
  conn.pragma('cache_size = -16384'); // as the service's store
  conn.pragma(`mmap_size = ${SQLITE_MMAP_DEFAULT}`);
  const validation = licenseStatements({ db: new Kysely<Database>({ dialect: new SqliteDialect({ database: conn }) }), lockRows: false }).validation;
  const lookup = conn.prepare(validation.bind({ key: '', identifier: '' }).sql).raw(true);
  const deviceName = lookup.columns().findIndex((c) => c.name === 'device_name');
  const schema = { body: PublicLicenseQuery, response: { 200: PublicValidationResult } };
  const at = new Date().toISOString();
  const answer = (key: string, identifier: string) => ({
    isValid: true,
    status: 'active',
    device: { identifier, name: 'Bench device', activationDate: at },
    license: { key, productId: 'product', type: 'perpetual', revoked: false, maxDevices: 1, expiresAt: null, createdAt: at, entitlements: [], trial: false },
  });
  type Query = { licenseKey: string; deviceIdentifier: string };
  app.post('/reference/answer', { schema }, async (req) => {
    const { licenseKey, deviceIdentifier } = req.body as Query;
    return answer(licenseKey, deviceIdentifier);
  });
  app.post('/reference/lookup', { schema }, async (req) => {
    const { licenseKey, deviceIdentifier } = req.body as Query;
    const row = lookup.get(validation.bind({ key: licenseKey, identifier: deviceIdentifier }).parameters) as unknown[] | undefined;
    if (!row || row[deviceName] === null) return { isValid: false, status: null, device: null, license: null, reason: 'not_found' };
    return answer(row[0] as string, deviceIdentifier);
  });
}

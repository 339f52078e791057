import { Prepared } from '../../storage/prepared.ts';
import type { Store } from '../../storage/index.ts';
import { bool, flag, type LicenseTokenConfigsTable } from '../../storage/schema.ts';
import type { Selectable } from 'kysely';
import type { LicenseTokenRepository, TokenConfig, TokenConfigFields } from './service.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import type { Unit } from '../../core/unit-of-work.ts';

const toConfig = (r: Selectable<LicenseTokenConfigsTable>): TokenConfig => ({
  productId: r.product_id,
  enabled: bool(r.enabled),
  validitySeconds: r.validity_seconds,
  exposePublicKey: bool(r.expose_public_key),
  keyId: r.key_id,
  publicKeyPem: r.public_key_pem,
  privateKeySealed: r.private_key_sealed,
  version: Number(r.version),
});

const columns = (f: TokenConfigFields) => ({
  enabled: flag(f.enabled),
  validity_seconds: f.validitySeconds,
  expose_public_key: flag(f.exposePublicKey),
  key_id: f.keyId,
  public_key_pem: f.publicKeyPem,
  private_key_sealed: f.privateKeySealed,
});

export class SqlLicenseTokenRepository implements LicenseTokenRepository {
  // Asked by every process's signer cache once per product per revalidation interval.
  private readonly versionQuery: Prepared<{ productId: string }, { version: number }>;
  private readonly configQuery: Prepared<{ productId: string }, Selectable<LicenseTokenConfigsTable>>;

  constructor(private readonly store: Store) {
    const db = store.db;
    this.versionQuery = new Prepared((p) => db.selectFrom('license_token_configs').select('version').where('product_id', '=', p('productId')));
    this.configQuery = new Prepared((p) => db.selectFrom('license_token_configs').selectAll().where('product_id', '=', p('productId')));
  }

  async get(productId: string): Promise<TokenConfig | undefined> {
    const row = await this.store.read.first(this.configQuery.bind({ productId }));
    return row && toConfig(row);
  }

  async version(productId: string): Promise<number | undefined> {
    const row = await this.store.read.first(this.versionQuery.bind({ productId }));
    return row && Number(row.version);
  }

  async modify(unit: Unit, productId: string, defaults: TokenConfigFields, change: (current: TokenConfigFields) => TokenConfigFields, updatedAt: number): Promise<TokenConfig> {
    const db = this.store.db;
    const tx = executorOf(unit);
    const row = await tx.first(
      db.selectFrom('license_token_configs').selectAll().where('product_id', '=', productId).$if(this.store.lockRows, (q) => q.forUpdate()),
    );
    const current = row ? toConfig(row) : undefined;
    const next = change(current ?? defaults);
    const version = (current?.version ?? 0) + 1;
    if (current) {
      await tx.run(db.updateTable('license_token_configs').set({ ...columns(next), version, updated_at: updatedAt }).where('product_id', '=', productId));
      return { productId, ...next, version };
    }
    const inserted = await tx.run(
      db.insertInto('license_token_configs').values({ product_id: productId, ...columns(next), version, updated_at: updatedAt }).onConflict((oc) => oc.column('product_id').doNothing()),
    );
    if (inserted === 1) return { productId, ...next, version };
    // PostgreSQL: another first writer inserted the row meanwhile (its insert made ours wait, then
    // do nothing). The change applies to that row, locked and read again, not to the defaults:
    // building on the defaults would undo the other writer's settings.
    return this.modify(unit, productId, defaults, change, updatedAt);
  }
}

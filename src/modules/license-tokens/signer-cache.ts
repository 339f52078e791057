import type { SecretBox } from '../../core/secret-box.ts';
import type { LicenseTokenRepository } from './service.ts';
import { TokenSigner } from './signer.ts';

interface Entry {
  version: number;
  /** null: tokens are off (or there is no key) for this product. */
  signer: TokenSigner | null;
  checkedAt: number;
}

/** A product that was never configured: any real row has version >= 1. */
const NO_ROW = 0;
const MAX_ENTRIES = 10_000;

/**
 * One ready signer per product, so the hot path never decrypts or parses a key.
 *
 * Several processes may share one PostgreSQL, and any of them may rotate a key or turn tokens
 * off. Each entry is trusted for `revalidateMs`; after that the next request asks the store for
 * the config's version (one primary-key lookup, at most once per product per interval) and
 * reloads only when it changed. A change is therefore in force everywhere within `revalidateMs`
 * (1 s by default), and immediately in the process that made it (`forget`).
 */
export class SignerCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<TokenSigner | null>>();
  /** Bumped by `forget`: a lookup that started before a change must not store what it read. */
  private epoch = 0;

  constructor(
    private readonly repo: LicenseTokenRepository,
    private readonly box: SecretBox,
    private readonly options: { revalidateMs: number; clock: () => number },
  ) {}

  get(productId: string): Promise<TokenSigner | null> | TokenSigner | null {
    const entry = this.entries.get(productId);
    if (entry && this.options.clock() - entry.checkedAt < this.options.revalidateMs) return entry.signer;
    // Concurrent requests for one product share a single lookup.
    let pending = this.loading.get(productId);
    if (!pending) {
      const started = this.revalidate(productId, entry).finally(() => {
        if (this.loading.get(productId) === started) this.loading.delete(productId);
      });
      pending = started;
      this.loading.set(productId, started);
    }
    return pending;
  }

  forget(productId: string): void {
    this.epoch++;
    this.entries.delete(productId);
    this.loading.delete(productId);
  }

  private async revalidate(productId: string, entry: Entry | undefined): Promise<TokenSigner | null> {
    const checkedAt = this.options.clock();
    const epoch = this.epoch;
    if (entry && ((await this.repo.version(productId)) ?? NO_ROW) === entry.version) {
      entry.checkedAt = checkedAt;
      return entry.signer;
    }
    const config = await this.repo.get(productId);
    const signer =
      config?.enabled && config.privateKeySealed && config.keyId
        ? new TokenSigner(this.box.open(config.privateKeySealed, productId), config.keyId, config.validitySeconds)
        : null;
    if (epoch !== this.epoch) return signer;
    this.entries.delete(productId); // re-inserted last: the oldest entries are evicted first
    this.entries.set(productId, { version: config?.version ?? NO_ROW, signer, checkedAt });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return signer;
  }
}

import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import type { LicenseStatus } from '../../core/license-status.ts';
import type { Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import { TurnBatch } from '../../core/turn-batch.ts';
import type { ProductService } from '../products/service.ts';
import { failureError } from '../licenses/checks.ts';
import type { ActivationSeal, LicenseService } from '../licenses/service.ts';
import type { TokenIssuer } from '../public/routes.ts';
import { generateKeyPair, importPrivateKeyPem, type KeyPairMaterial, publicJwk, type PublicJwk } from './key-pair.ts';
import { SignerCache } from './signer-cache.ts';

export const VALIDITY_MIN = 3600;
export const VALIDITY_MAX = 31_536_000;
export const VALIDITY_DEFAULT = 604_800;

/** One product's token settings as stored. A product never configured has no row (defaults apply). */
export interface TokenConfig {
  productId: string;
  enabled: boolean;
  validitySeconds: number;
  exposePublicKey: boolean;
  keyId: string | null;
  publicKeyPem: string | null;
  privateKeySealed: string | null;
  /** Goes up by one on every change; signer caches in every process compare it. */
  version: number;
}

export type TokenConfigFields = Omit<TokenConfig, 'productId' | 'version'>;

export interface LicenseTokenRepository {
  get(productId: string): Promise<TokenConfig | undefined>;
  /** The cheap question a cache asks to learn whether its copy is current. */
  version(productId: string): Promise<number | undefined>;
  /** Reads the config (defaults when none), applies `change` and saves it with the next version, atomically. */
  modify(unit: Unit, productId: string, defaults: TokenConfigFields, change: (current: TokenConfigFields) => TokenConfigFields, now: number): Promise<TokenConfig>;
}

export interface TokenConfigView {
  enabled: boolean;
  validitySeconds: number;
  exposePublicKey: boolean;
  keyId: string | null;
  publicKeyJwk: PublicJwk | null;
  publicKeyPem: string | null;
}

export interface KeyPairInput {
  copyFromProductId?: string;
  privateKeyPem?: string;
}

const DEFAULTS: TokenConfigFields = {
  enabled: false,
  validitySeconds: VALIDITY_DEFAULT,
  exposePublicKey: true,
  keyId: null,
  publicKeyPem: null,
  privateKeySealed: null,
};

function view(config: TokenConfigFields): TokenConfigView {
  return {
    enabled: config.enabled,
    validitySeconds: config.validitySeconds,
    exposePublicKey: config.exposePublicKey,
    keyId: config.keyId,
    publicKeyJwk: config.publicKeyPem && config.keyId ? publicJwk(config.publicKeyPem, config.keyId) : null,
    publicKeyPem: config.publicKeyPem,
  };
}

export interface LicenseTokenServiceOptions {
  /** How long a process trusts its cached signer before asking the store whether the config changed. */
  revalidateMs?: number;
  clock?: () => number;
}

/**
 * Signed license tokens: per-product settings and key pairs (server API), the public key
 * (public API), and token issue on activation and refresh. Private keys are stored only sealed
 * with the server secret; signing uses a cached key object per product (see SignerCache).
 */
export class LicenseTokenService implements TokenIssuer {
  private readonly signers: SignerCache;
  /** Refreshes are signed together, per event-loop turn. */
  private readonly signatures = new TurnBatch();
  private readonly clock: () => number;

  constructor(
    private readonly repo: LicenseTokenRepository,
    private readonly units: UnitRunner,
    private readonly products: ProductService,
    private readonly licenses: LicenseService,
    private readonly box: SecretBox,
    options: LicenseTokenServiceOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.signers = new SignerCache(repo, box, { revalidateMs: options.revalidateMs ?? 1000, clock: this.clock });
  }

  async getConfig(principal: Principal, productId: string): Promise<TokenConfigView> {
    await this.products.get(principal, productId); // 404 unless the caller owns it
    return view((await this.repo.get(productId)) ?? DEFAULTS);
  }

  async updateConfig(principal: Principal, productId: string, input: Partial<Pick<TokenConfig, 'enabled' | 'validitySeconds' | 'exposePublicKey'>>): Promise<TokenConfigView> {
    await this.products.get(principal, productId);
    if (input.validitySeconds !== undefined && (input.validitySeconds < VALIDITY_MIN || input.validitySeconds > VALIDITY_MAX)) {
      throw invalidRequest('validitySeconds', `must be between ${VALIDITY_MIN} and ${VALIDITY_MAX}`);
    }
    // Generated before the unit of work (which should hold nothing but its statements). Keys are
    // never removed, so a product seen with one here still has it inside the unit.
    const hasKey = Boolean((await this.repo.get(productId))?.privateKeySealed);
    const fresh = input.enabled && !hasKey ? generateKeyPair() : undefined;
    const saved = await this.units.run((unit) => this.repo.modify(unit, productId, DEFAULTS, (current) => {
      const next = { ...current };
      if (input.enabled !== undefined) next.enabled = input.enabled;
      if (input.validitySeconds !== undefined) next.validitySeconds = input.validitySeconds;
      if (input.exposePublicKey !== undefined) next.exposePublicKey = input.exposePublicKey;
      if (next.enabled && !next.privateKeySealed && fresh) Object.assign(next, this.keyFields(productId, fresh));
      return next;
    }, this.clock()));
    this.signers.forget(productId);
    return view(saved);
  }

  /** A new pair, a copy of another of the caller's products' pair, or an imported key. Tokens signed before no longer verify with the new public key. */
  async replaceKeyPair(principal: Principal, productId: string, input: KeyPairInput): Promise<TokenConfigView> {
    await this.products.get(principal, productId);
    if (input.copyFromProductId !== undefined && input.privateKeyPem !== undefined) {
      throw invalidRequest('copyFromProductId', 'give either copyFromProductId or privateKeyPem, not both');
    }
    let material: KeyPairMaterial;
    if (input.privateKeyPem !== undefined) material = importPrivateKeyPem(input.privateKeyPem);
    else if (input.copyFromProductId !== undefined) material = await this.copyable(principal, input.copyFromProductId);
    else material = generateKeyPair();
    const saved = await this.units.run((unit) => this.repo.modify(unit, productId, DEFAULTS, (current) => ({ ...current, ...this.keyFields(productId, material) }), this.clock()));
    this.signers.forget(productId);
    return view(saved);
  }

  /** Public: the product's verification key, only while tokens are on and the operator exposes it. */
  async publicKey(productId: string): Promise<PublicJwk> {
    const config = await this.repo.get(productId);
    if (!config?.enabled || !config.exposePublicKey || !config.publicKeyPem || !config.keyId) throw notFound('Public key');
    return publicJwk(config.publicKeyPem, config.keyId);
  }

  /**
   * The seal public activation runs inside its unit: signs the token with the product's key, or
   * gives none when the product has tokens off. Signers are loaded here, before the unit.
   */
  async sealForActivation(productIds: string | string[]): Promise<ActivationSeal> {
    const ids = [...new Set(Array.isArray(productIds) ? productIds : [productIds])];
    const signers = new Map(await Promise.all(ids.map(async (id) => [id, await this.signers.get(id)] as const)));
    return (activation) => signers.get(activation.license.productId)?.sign(activation, this.clock());
  }

  /**
   * Token refresh: the validation checks (one list, in licenses/checks.ts), then a fresh token and
   * the status it carries, signed with the other refreshes of this event-loop turn (TurnBatch).
   */
  async refresh(licenseKey: string, productId: string | string[], deviceIdentifier: string): Promise<{ token: string; status: LicenseStatus }> {
    const result = await this.licenses.publicValidate(licenseKey, productId, deviceIdentifier);
    if (!result.isValid) throw failureError(result.reason);
    // The cache answers at once while its entry is fresh (nearly always): no await then.
    const cached = this.signers.get(result.license.productId);
    const signer = cached instanceof Promise ? await cached : cached;
    if (!signer) throw new AppError('license_tokens_disabled', 'License tokens are not enabled for this product.');
    return { token: await this.signatures.run(() => signer.sign(result, this.clock())), status: result.status };
  }

  private async copyable(principal: Principal, sourceId: string): Promise<KeyPairMaterial> {
    await this.products.get(principal, sourceId); // another account's product is a 404, like any other
    const source = await this.repo.get(sourceId);
    if (!source?.privateKeySealed || !source.publicKeyPem || !source.keyId) {
      throw invalidRequest('copyFromProductId', 'that product has no key pair yet');
    }
    return { privateKeyPem: this.box.open(source.privateKeySealed, sourceId), publicKeyPem: source.publicKeyPem, keyId: source.keyId };
  }

  private keyFields(productId: string, material: KeyPairMaterial): Pick<TokenConfig, 'keyId' | 'publicKeyPem' | 'privateKeySealed'> {
    return { keyId: material.keyId, publicKeyPem: material.publicKeyPem, privateKeySealed: this.box.seal(material.privateKeyPem, productId) };
  }
}

import { AppError, notFound } from '../../core/errors.ts';
import { licenseStatus } from '../../core/license-status.ts';
import { UNRESTRICTED } from '../../core/access.ts';
import { PUBLIC_ACTOR, type Principal } from '../../core/principal.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { Activation, ActivationSeal, LicenseService } from '../licenses/service.ts';
import { cleanIdentifier } from '../licenses/service.ts';
import type { ProductService } from '../products/service.ts';

const DAY = 86_400_000;

/** Thrown inside the unit to roll it back; answered after it (reading the earlier trial's status). */
const TRIAL_USED = Symbol('trial already used');

export interface TrialInput {
  productId: string;
  deviceIdentifier: string;
  deviceName: string;
  email?: string | null;
}

/** The one trial each product and device identifier may ever start. */
export interface TrialRepository {
  /** Records the trial; false when this product and device already have one (any unit's, committed or not: the key decides). */
  claim(unit: Unit, productId: string, deviceIdentifier: string, licenseKey: string, now: number): Promise<boolean>;
  /** The license of the device's trial, when it has one. */
  licenseOf(productId: string, deviceIdentifier: string, unit?: Unit): Promise<string | undefined>;
}

/**
 * Trials started from an app, without a key (decisions.md, "Licensing model"): a timed license of the
 * product's trial length, flagged `trial`, with the product's default entitlements, created and
 * activated on the asking device in one unit. The license then goes through the same checks as any
 * other (expiry ends the trial: there is no trial status). A product with trials off is unknown here.
 */
export class TrialService {
  constructor(
    private readonly repo: TrialRepository,
    private readonly units: UnitRunner,
    private readonly products: ProductService,
    private readonly licenses: LicenseService,
    private readonly clock: () => number = Date.now,
  ) {}

  async start(input: TrialInput, seal?: ActivationSeal): Promise<Activation & { token?: string }> {
    const product = await this.products.findPublic(input.productId);
    if (!product?.trial.enabled) throw notFound('Product');
    const identifier = cleanIdentifier(input.deviceIdentifier);
    // The product's trial setting is the operator's permission: the app starts the trial for the account.
    const owner: Principal = { accountId: product.accountId, actor: PUBLIC_ACTOR, access: UNRESTRICTED };
    const now = this.clock();
    try {
      return await this.units.run(async (unit) => {
        const license = await this.licenses.create(
          owner,
          { productId: product.id, type: 'timed', expiresAt: new Date(now + product.trial.days * DAY).toISOString(), maxDevices: product.trial.maxDevices, email: input.email ?? null, trial: true },
          unit,
        );
        // The product and device's one row decides, concurrent requests included: the loser's license rolls back.
        if (!(await this.repo.claim(unit, product.id, identifier, license.key, now))) throw TRIAL_USED;
        return this.licenses.publicActivate(license.key, product.id, { identifier, name: input.deviceName }, seal, unit);
      });
    } catch (error) {
      if (error === TRIAL_USED) throw await this.alreadyUsed(owner, product.id, identifier, product.fallbackEnabled, now);
      throw error;
    }
  }

  /** 409 with the status of the device's trial license (null when it was deleted). */
  private async alreadyUsed(owner: Principal, productId: string, identifier: string, fallbackEnabled: boolean, now: number): Promise<AppError> {
    const key = await this.repo.licenseOf(productId, identifier);
    const license = key === undefined ? undefined : await this.licenses.get(owner, key).catch(() => undefined);
    const status = license ? licenseStatus(license, fallbackEnabled, now) : null;
    return new AppError('trial_already_used', 'This device has already used its trial of this product.', undefined, { status });
  }
}

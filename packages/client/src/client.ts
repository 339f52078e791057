import { type ApiError, type ApiResult, type HttpOptions, isTransportError, request } from './http.js';
import { MemoryTokenStorage, type TokenStorage } from './storage.js';
import type { WirePublicActivation, WirePublicLicense, WireTokenRefresh, WireValidationReason } from './wire.generated.js';
import { decodeClaims, type PublicJwk, type TokenClaims, type TokenFailure, type TokenVerification, type VerifyingSubtleCrypto, verifyLicenseToken } from './token.js';

const DAY_SECONDS = 86_400;

const NO_WEBCRYPTO =
  "No WebCrypto in this runtime to verify license tokens with. On Node 18 pass `crypto: (await import('node:crypto')).webcrypto` in the LicenseClient options; in a browser, serve the app over HTTPS (crypto.subtle needs a secure context).";

export interface LicenseClientOptions {
  /** The Tessera server, e.g. https://licensing.example.com (no trailing /api/v1). */
  baseUrl: string;
  /** The product this app is, or several (tiers): a license for any of them is accepted. */
  productId: string | readonly string[];
  /**
   * The product's token verification key(s), shipped with the app. Give the old and the new
   * key during a key rotation; tokens name theirs in the `kid` header.
   */
  publicKey?: PublicJwk | readonly PublicJwk[];
  /** Where the token lives between runs (default: memory only). */
  storage?: TokenStorage;
  /** Per request (default 10 s). */
  timeoutMs?: number;
  /** Refresh a token this long before it expires (default 3 days). */
  refreshBeforeExpirySeconds?: number;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /**
   * WebCrypto, for verifying tokens. Defaults to `globalThis.crypto` (Node 19+, browsers,
   * Electron). Node 18 has no global one: pass `(await import('node:crypto')).webcrypto`.
   * Without either, token methods answer `no_webcrypto` (as values) and send nothing.
   */
  crypto?: { readonly subtle: VerifyingSubtleCrypto };
  /** Milliseconds since the epoch (tests). */
  now?: () => number;
}

export interface DeviceRef {
  licenseKey: string;
  deviceIdentifier: string;
}

/** A device as public answers show it (on a floating product, with its lease end). */
export type Device = WirePublicActivation['device'];

export type PublicLicense = WirePublicLicense;

export interface Activation {
  isValid: true;
  status: 'active' | 'fallbacked';
  /** Present when the product has license tokens on. Already verified and stored when returned. */
  token?: string;
  device: Device;
  license: PublicLicense;
}

export type ValidationReason = WireValidationReason;

export type Validation =
  | { isValid: true; status: 'active' | 'fallbacked'; device: Device; license: PublicLicense }
  | { isValid: false; status: null; device: null; license: null; reason: ValidationReason };

/** What the app should do after `validateAndRefreshToken`. */
export type LicenseState =
  | {
      valid: true;
      status: TokenClaims['status'];
      /** Fallbacked: grant the limited access the product gives after expiry. */
      limited: boolean;
      /** The server could not be reached when it should have been; the stored token decided. */
      offline: boolean;
      /** The token's own `exp` has passed (only ever true together with `offline`). */
      tokenExpired: boolean;
      /** A new token was fetched, verified and stored during this call. */
      refreshed: boolean;
      claims: TokenClaims;
    }
  | {
      valid: false;
      code: TokenFailure | ApiError['code'] | 'no_token' | 'no_public_key';
      message: string;
      /** True only when the user must enter a license key: never for a network problem. */
      needsActivation: boolean;
    };

/** Heartbeats go out when this share of the lease is left, so one lost request leaves time for another. */
const HEARTBEAT_AT_REMAINING = 0.5;
const HEARTBEAT_MIN_MS = 10_000;
const HEARTBEAT_RETRY_MS = 30_000;

/**
 * Whether a license unlocks a feature: from a validation's or activation's `license`, or a token's
 * claims (offline). A server or token without entitlements unlocks none.
 */
export function hasEntitlement(source: { entitlements?: readonly string[] } | TokenClaims, code: string): boolean {
  const entitlements = 'license' in source ? source.license.entitlements : source.entitlements;
  return entitlements?.includes(code) ?? false;
}

/** Running heartbeats of a floating license (startHeartbeat). */
export interface Heartbeats {
  stop(): void;
}

/** Server verdicts about the license itself (as opposed to the network or the product's settings). */
const LICENSE_VERDICTS = new Set(['invalid_license', 'license_revoked', 'license_expired']);

/**
 * The Tessera client for apps: the public API (activate, validate, remove a device, tokens)
 * and offline verification of license tokens. Uses only fetch and WebCrypto, so it runs in
 * Node 18+ (Node 18: with `options.crypto`), browsers and Electron. Expected failures come back
 * as values, never as exceptions.
 */
export class LicenseClient {
  private readonly http: HttpOptions;
  private readonly productIds: readonly string[];
  private readonly keys: readonly PublicJwk[];
  private readonly storage: TokenStorage;
  private readonly refreshBeforeSeconds: number;
  private readonly subtle: VerifyingSubtleCrypto | undefined;
  private readonly now: () => number;

  constructor(options: LicenseClientOptions) {
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (!fetchImpl) throw new Error('No fetch available: pass options.fetch');
    this.http = { baseUrl: options.baseUrl.replace(/\/+$/, ''), timeoutMs: options.timeoutMs ?? 10_000, fetch: fetchImpl.bind(globalThis) };
    this.productIds = typeof options.productId === 'string' ? [options.productId] : [...options.productId];
    if (this.productIds.length === 0) throw new Error('options.productId must name at least one product');
    this.keys = options.publicKey === undefined ? [] : Array.isArray(options.publicKey) ? [...options.publicKey] : [options.publicKey as PublicJwk];
    this.storage = options.storage ?? new MemoryTokenStorage();
    this.refreshBeforeSeconds = options.refreshBeforeExpirySeconds ?? 3 * DAY_SECONDS;
    this.subtle = (options.crypto ?? globalThis.crypto)?.subtle;
    this.now = options.now ?? Date.now;
  }

  private get productId(): string | string[] {
    return this.productIds.length === 1 ? this.productIds[0]! : [...this.productIds];
  }

  /** Activates this device; when the product issues tokens, the token is verified and stored. */
  async activate(input: DeviceRef & { deviceName: string }): Promise<ApiResult<Activation>> {
    // Checked before the request: an activation whose token cannot be verified here would use up
    // a device slot and leave nothing stored, so the app would ask for the key again.
    if (this.keys.length > 0 && !this.subtle) return { ok: false, error: { code: 'no_webcrypto', message: NO_WEBCRYPTO } };
    const result = await request<Activation>(this.http, 'POST', '/api/v1/public/licenses/activate', { ...input, productId: this.productId });
    return this.storeToken(result, input.deviceIdentifier);
  }

  /** An activation's token verified and stored (when there is one and the app holds keys). */
  private async storeToken(result: ApiResult<Activation>, deviceIdentifier: string): Promise<ApiResult<Activation>> {
    if (!result.ok || result.value.token === undefined || this.keys.length === 0) return result;
    const check = await this.verifyToken(result.value.token, deviceIdentifier);
    if (!check.valid) return { ok: false, error: { code: check.code, message: `Activated, but the token does not verify: ${check.message}` } };
    await this.storage.set(result.value.token);
    return result;
  }

  /** Online validation: always answers `isValid` for a well-formed request. */
  validate(input: DeviceRef): Promise<ApiResult<Validation>> {
    return request<Validation>(this.http, 'POST', '/api/v1/public/licenses/validate', { ...input, productId: this.productId });
  }

  /**
   * A floating license's heartbeat: renews this device's lease (answers as validate; a lapsed lease
   * is `device_not_activated`: activate again). On a node-locked product it is a validation.
   */
  heartbeat(input: DeviceRef): Promise<ApiResult<Validation>> {
    return request<Validation>(this.http, 'POST', '/api/v1/public/licenses/heartbeat', { ...input, productId: this.productId });
  }

  /**
   * Heartbeats at an automatic interval for a floating product: each one is sent when half of the
   * lease the last answer gave is left (at least 10 s apart; 30 s after a network failure). On a
   * node-locked product (no lease in the answer) it stops after the first. `onResult` sees every
   * answer; an invalid one (the lease lapsed, the license was revoked) stops the heartbeats.
   */
  startHeartbeat(input: DeviceRef, onResult: (result: ApiResult<Validation>) => void = () => {}): Heartbeats {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const beat = async () => {
      const result = await this.heartbeat(input);
      if (stopped) return;
      onResult(result);
      if (!result.ok) return void (timer = setTimeout(beat, HEARTBEAT_RETRY_MS));
      const leaseEnd = result.value.isValid ? result.value.device.leaseExpiresAt : undefined;
      if (leaseEnd === undefined) return;
      const wait = Math.max(HEARTBEAT_MIN_MS, (Date.parse(leaseEnd) - this.now()) * HEARTBEAT_AT_REMAINING);
      timer = setTimeout(beat, wait);
    };
    void beat();
    return {
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }

  /**
   * Starts the product's trial on this device, without a key (first product of the client). One per
   * product and device, ever: again is `trial_already_used`. The token, when issued, is verified and
   * stored as on activation.
   */
  async startTrial(input: { deviceIdentifier: string; deviceName: string; email?: string }): Promise<ApiResult<Activation>> {
    if (this.keys.length > 0 && !this.subtle) return { ok: false, error: { code: 'no_webcrypto', message: NO_WEBCRYPTO } };
    const result = await request<Activation>(this.http, 'POST', '/api/v1/public/trials', { ...input, productId: this.productIds[0] });
    return this.storeToken(result, input.deviceIdentifier);
  }

  /** Frees this device's slot and forgets the stored token. */
  async removeDevice(input: DeviceRef): Promise<ApiResult<void>> {
    const result = await request<void>(this.http, 'DELETE', '/api/v1/public/licenses/device', { ...input, productId: this.productId });
    if (result.ok) await this.storage.clear();
    return result;
  }

  /** A fresh token from the server, as is (not verified, not stored). */
  fetchToken(input: DeviceRef): Promise<ApiResult<WireTokenRefresh & { isValid: true }>> {
    return request(this.http, 'POST', '/api/v1/public/licenses/token', { ...input, productId: this.productId });
  }

  /** The product's published key (first product). Prefer shipping the key with the app: a fetched key is only as trustworthy as the connection. */
  async fetchPublicKey(): Promise<ApiResult<PublicJwk>> {
    const result = await request<{ jwk: PublicJwk }>(this.http, 'GET', `/api/v1/public/products/${encodeURIComponent(this.productIds[0]!)}/license-token/public-key`);
    return result.ok ? { ok: true, value: result.value.jwk } : result;
  }

  /** Offline: signature, product, device, license expiry, token expiry. */
  async verifyToken(token: string, deviceIdentifier: string): Promise<TokenVerification> {
    if (this.keys.length === 0) return { valid: false, code: 'unknown_key', message: 'No public key configured (options.publicKey).' };
    if (!this.subtle) return { valid: false, code: 'no_webcrypto', message: NO_WEBCRYPTO };
    return verifyLicenseToken(token, { keys: this.keys, productIds: this.productIds, deviceIdentifier, now: this.now(), subtle: this.subtle });
  }

  /**
   * The spec's client rules in one call, for app start (and periodically): verify the stored
   * token; refresh it when it is close to expiry (or expired, or signed by a key the app no
   * longer holds), storing the new one only after it verifies; when the server cannot be
   * reached, a token that was genuine keeps the app running ("valid but offline"), even past
   * its `exp`, and the user is never asked to activate because of a network problem.
   */
  async validateAndRefreshToken(deviceIdentifier: string): Promise<LicenseState> {
    if (this.keys.length === 0) return { valid: false, code: 'no_public_key', message: 'No public key configured (options.publicKey).', needsActivation: false };
    // Not a verdict on the license: the stored token is kept and nothing is sent.
    if (!this.subtle) return { valid: false, code: 'no_webcrypto', message: NO_WEBCRYPTO, needsActivation: false };
    const stored = await this.storage.get();
    if (!stored) return { valid: false, code: 'no_token', message: 'No license token stored on this device.', needsActivation: true };
    const local = await this.verifyToken(stored, deviceIdentifier);
    if (local.valid && local.claims.exp - Math.floor(this.now() / 1000) > this.refreshBeforeSeconds) {
      return this.validState(local.claims, { offline: false, tokenExpired: false, refreshed: false });
    }
    // The license key to refresh with: from the verified claims, or (for a token under an
    // unknown key) read unverified; the server decides, and its answer is verified before use.
    const licenseKey = (local.valid ? local.claims : (local.claims ?? decodeClaims(stored)))?.license.key;
    if (!licenseKey) return { valid: false, code: 'malformed', message: 'The stored token is unreadable.', needsActivation: true };

    const fetched = await this.fetchToken({ licenseKey, deviceIdentifier });
    if (fetched.ok) {
      const fresh = await this.verifyToken(fetched.value.token, deviceIdentifier);
      if (fresh.valid) {
        await this.storage.set(fetched.value.token);
        return this.validState(fresh.claims, { offline: false, tokenExpired: false, refreshed: true });
      }
      if (local.valid) return this.validState(local.claims, { offline: false, tokenExpired: false, refreshed: false });
      return { valid: false, code: fresh.code, message: `The server's token does not verify: ${fresh.message}`, needsActivation: false };
    }
    const error = fetched.error;
    if (LICENSE_VERDICTS.has(error.code)) {
      // The server's word on the license beats the stored token: forget it.
      await this.storage.clear();
      return { valid: false, code: error.code, message: error.message, needsActivation: error.code === 'invalid_license' };
    }
    if (local.valid) return this.validState(local.claims, { offline: isTransportError(error), tokenExpired: false, refreshed: false });
    if (local.code === 'token_expired' && isTransportError(error)) {
      return this.validState(local.claims!, { offline: true, tokenExpired: true, refreshed: false });
    }
    return { valid: false, code: local.code, message: `${local.message} (refresh failed: ${error.message})`, needsActivation: false };
  }

  private validState(claims: TokenClaims, flags: { offline: boolean; tokenExpired: boolean; refreshed: boolean }): LicenseState {
    return { valid: true, status: claims.status, limited: claims.status === 'fallbacked', ...flags, claims };
  }
}

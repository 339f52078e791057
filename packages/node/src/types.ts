/**
 * Types of the Tessera server API (decisions.md); timestamps are ISO 8601 UTC strings. The shapes
 * the server answers with come from wire.generated.ts (generated from the server's schemas).
 */
import type { WireDevice, WireLicense, WireLicensePage, WireLicenseStatus, WirePortalSession, WireProduct, WireServerValidation } from './wire.generated.js';

export type Product = WireProduct;

export interface ProductFields {
  name: string;
  description?: string;
  supportEmail?: string | null;
  portalShow?: boolean;
  portalAllowDeviceReset?: boolean;
  fallbackEnabled?: boolean;
  purchaseNote?: string | null;
  actionButtonText?: string | null;
  /** http(s) URL; `{key}` is replaced by the URL-encoded license key where shown. */
  actionButtonUrl?: string | null;
  /** Portal device resets per license within the window (1 to 1000, default 3). */
  portalDeviceResetLimit?: number;
  /** That window in days (1 to 365, default 30). */
  portalDeviceResetWindowDays?: number;
  /** Entitlement codes a new license gets unless given its own. */
  defaultEntitlements?: string[];
  /** Floating seats: activations hold leases of leaseSeconds (60 to 86400, default 900) renewed by heartbeats. */
  floating?: { enabled?: boolean; leaseSeconds?: number };
  /** Trials from the public API: a timed license of `days` (1 to 365) for `maxDevices` (1 to 100). */
  trial?: { enabled?: boolean; days?: number; maxDevices?: number };
}

export type Device = WireDevice;

export type LicenseType = 'perpetual' | 'timed';
export type LicenseStatus = WireLicenseStatus;

export type License = WireLicense;

export interface CreateLicenseInput {
  productId: string;
  type: LicenseType;
  /** ISO 8601 date-time with Z or an offset, or YYYY-MM-DD; required for `timed`. */
  expiresAt?: string | null;
  maxDevices: number;
  email?: string | null;
  /** Queue the purchase e-mail to `email` (which is then required). */
  sendEmail?: boolean;
  /** Feature codes; absent: the product's default entitlements. */
  entitlements?: string[];
  /** At most 50 keys (40 characters) of string values (500 characters); server views only. */
  metadata?: Record<string, string>;
}

export interface UpdateLicenseInput {
  type?: LicenseType;
  expiresAt?: string | null;
  maxDevices?: number;
  email?: string | null;
  revoked?: boolean;
  /** Replaces the set. */
  entitlements?: string[];
  /** Sets the keys given; a null value removes its key. */
  metadata?: Record<string, string | null>;
}

export type LicensePage = WireLicensePage;

export type LicenseValidation = WireServerValidation;

export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  alg: 'ES256';
  x: string;
  y: string;
  kid: string;
}

export interface LicenseTokenConfig {
  enabled: boolean;
  validitySeconds: number;
  exposePublicKey: boolean;
  keyId: string | null;
  publicKeyJwk: PublicJwk | null;
  publicKeyPem: string | null;
}

export interface LicenseTokenConfigInput {
  enabled?: boolean;
  /** 3600 to 31536000 (default 604800, 7 days). */
  validitySeconds?: number;
  exposePublicKey?: boolean;
}

export type PortalSession = WirePortalSession;

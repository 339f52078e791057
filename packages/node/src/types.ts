/** Wire types of the Tessera server API (decisions.md); timestamps are ISO 8601 UTC strings. */

export interface Product {
  id: string;
  userId: string;
  name: string;
  description: string;
  supportEmail: string | null;
  createdAt: string;
  portalShow: boolean;
  portalAllowDeviceReset: boolean;
  hasImage: boolean;
  fallbackEnabled: boolean;
  portalDeviceResetLimit: number;
  portalDeviceResetWindowDays: number;
  purchaseNote: string | null;
  actionButtonText: string | null;
  actionButtonUrl: string | null;
}

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
}

export interface Device {
  identifier: string;
  name: string;
  activationDate: string;
}

export type LicenseType = 'perpetual' | 'timed';
export type LicenseStatus = 'active' | 'expired' | 'revoked' | 'fallbacked';

export interface License {
  key: string;
  userId: string;
  productId: string;
  type: LicenseType;
  expiresAt: string | null;
  revoked: boolean;
  email: string | null;
  maxDevices: number;
  activeDevices: Device[];
  createdAt: string;
}

export interface CreateLicenseInput {
  productId: string;
  type: LicenseType;
  /** ISO 8601 date-time with Z or an offset, or YYYY-MM-DD; required for `timed`. */
  expiresAt?: string | null;
  maxDevices: number;
  email?: string | null;
  /** Queue the purchase e-mail to `email` (which is then required). */
  sendEmail?: boolean;
}

export interface UpdateLicenseInput {
  type?: LicenseType;
  expiresAt?: string | null;
  maxDevices?: number;
  email?: string | null;
  revoked?: boolean;
}

export interface LicensePage {
  data: License[];
  nextCursor: string | null;
}

export interface LicenseValidation {
  isValid: boolean;
  status: LicenseStatus;
  device: Device | null;
  license: License;
}

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

export interface PortalSession {
  /** Opens the customer portal for that address, showing only this account's products. */
  url: string;
  expiresAt: string;
}

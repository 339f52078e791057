export { LicenseClient } from './client.js';
export type { Activation, Device, DeviceRef, LicenseClientOptions, LicenseState, PublicLicense, Validation, ValidationReason } from './client.js';
export { isTransportError } from './http.js';
export type { ApiError, ApiErrorCode, ApiResult } from './http.js';
export { MemoryTokenStorage, WebStorageTokenStorage } from './storage.js';
export type { TokenStorage, WebStorage } from './storage.js';
export { decodeClaims, verifyLicenseToken } from './token.js';
export type { PublicJwk, TokenClaims, TokenFailure, TokenVerification, VerifyingKey, VerifyingSubtleCrypto, VerifyOptions } from './token.js';

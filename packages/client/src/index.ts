export { LicenseClient } from './client.ts';
export type { Activation, Device, DeviceRef, LicenseClientOptions, LicenseState, PublicLicense, Validation, ValidationReason } from './client.ts';
export { isTransportError } from './http.ts';
export type { ApiError, ApiErrorCode, ApiResult } from './http.ts';
export { MemoryTokenStorage, WebStorageTokenStorage } from './storage.ts';
export type { TokenStorage } from './storage.ts';
export { decodeClaims, verifyLicenseToken } from './token.ts';
export type { PublicJwk, TokenClaims, TokenFailure, TokenVerification, VerifyOptions } from './token.ts';

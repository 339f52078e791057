/**
 * The one error model of the service. Every failure a client can see is an AppError with a
 * stable machine-readable code; the HTTP layer turns it into {"error": {code, message}}.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'invalid_license'
  | 'license_revoked'
  | 'license_expired'
  | 'max_devices_reached'
  | 'license_tokens_disabled'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'insufficient_scope'
  | 'plan_required'
  | 'not_found'
  | 'product_has_licenses'
  | 'request_timeout'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'idempotency_key_in_use'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'internal_error'
  | 'service_unavailable'
  | 'invalid_provider_key'
  | 'invalid_signature'
  | 'payments_not_connected'
  | 'price_already_mapped'
  | 'purchase_not_unmapped'
  | 'provider_unavailable'
  | 'trial_already_used';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_license: 400,
  license_revoked: 400,
  license_expired: 400,
  max_devices_reached: 400,
  license_tokens_disabled: 400,
  product_has_licenses: 400,
  invalid_provider_key: 400,
  invalid_signature: 400,
  payments_not_connected: 400,
  missing_api_key: 401,
  invalid_api_key: 403,
  insufficient_scope: 403,
  plan_required: 403,
  not_found: 404,
  request_timeout: 408,
  price_already_mapped: 409,
  purchase_not_unmapped: 409,
  trial_already_used: 409,
  idempotency_key_in_use: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  headers_too_large: 431,
  rate_limited: 429,
  internal_error: 500,
  provider_unavailable: 502,
  service_unavailable: 503,
};

/** Every code the service answers with (the SDKs' generated wire types are built from this list). */
export const ERROR_CODES = Object.keys(STATUS) as ErrorCode[];

export interface Issue {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly issues?: Issue[],
    /** Machine-readable facts the body carries beside the message (`trial_already_used`: the trial license's status). */
    readonly details?: Record<string, string | null>,
  ) {
    super(message);
    this.name = 'AppError';
    this.statusCode = STATUS[code];
  }
}

export const notFound = (what = 'Resource'): AppError => new AppError('not_found', `${what} not found.`);

export const invalidRequest = (path: string, message: string): AppError =>
  new AppError('invalid_request', 'The request is invalid.', [{ path, message }]);

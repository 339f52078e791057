export type TesseraErrorCode =
  | 'invalid_request'
  | 'invalid_license'
  | 'license_revoked'
  | 'license_expired'
  | 'max_devices_reached'
  | 'license_tokens_disabled'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'plan_required'
  | 'not_found'
  | 'product_has_licenses'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal_error'
  /** No answer: the server could not be reached. */
  | 'network_error'
  | 'timeout'
  /** An answer that is not the service's JSON. */
  | 'invalid_response';

/** Every failed call: the HTTP status (0 when there was no answer) and the service's `error.code`. */
export class TesseraError extends Error {
  override readonly name = 'TesseraError';

  constructor(
    readonly status: number,
    readonly code: TesseraErrorCode | (string & {}),
    message: string,
    readonly issues?: { path: string; message: string }[],
    /** Seconds, from Retry-After on a 429. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

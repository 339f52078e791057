import type { ServerErrorCode } from './wire.generated.js';

/** The service's codes (generated from the server) and those of a call that got no usable answer. */
export type TesseraErrorCode =
  | ServerErrorCode
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

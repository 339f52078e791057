import type { ServerErrorCode } from './wire.generated.js';

/** Error codes the service answers with (generated from the server), plus the ones a client meets on the way. */
export type ApiErrorCode =
  | ServerErrorCode
  /** The server could not be reached (DNS, refused, offline). */
  | 'network_error'
  /** No answer within `timeoutMs`. */
  | 'timeout'
  /** An answer that is not the service's JSON (a proxy page, a truncated body). */
  | 'invalid_response'
  /**
   * No WebCrypto here to verify tokens with (Node 18 without `options.crypto`, or a browser page
   * outside a secure context): nothing was sent to the server.
   */
  | 'no_webcrypto';

export interface ApiError {
  code: ApiErrorCode | (string & {});
  message: string;
  /** HTTP status, when there was an answer. */
  status?: number;
  issues?: { path: string; message: string }[];
}

/** Expected failures are values, never exceptions. */
export type ApiResult<T> = { ok: true; value: T } | { ok: false; error: ApiError };

/** Failures that say nothing about the license: the app should keep what it knows and retry later. */
export function isTransportError(error: ApiError): boolean {
  return (
    error.code === 'network_error' ||
    error.code === 'timeout' ||
    error.code === 'invalid_response' ||
    error.code === 'rate_limited' ||
    (error.status !== undefined && error.status >= 500)
  );
}

export interface HttpOptions {
  baseUrl: string;
  timeoutMs: number;
  fetch: typeof fetch;
}

export async function request<T>(http: HttpOptions, method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), http.timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await http.fetch(`${http.baseUrl}${path}`, {
      method,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
    });
    text = await response.text();
  } catch (cause) {
    const timedOut = controller.signal.aborted;
    return {
      ok: false,
      error: timedOut
        ? { code: 'timeout', message: `No answer from ${http.baseUrl} within ${http.timeoutMs} ms.` }
        : { code: 'network_error', message: `Could not reach ${http.baseUrl}: ${cause instanceof Error ? cause.message : String(cause)}` },
    };
  } finally {
    clearTimeout(timer);
  }
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    return { ok: false, error: { code: 'invalid_response', message: `HTTP ${response.status} with a body that is not JSON.`, status: response.status } };
  }
  if (response.ok) return { ok: true, value: json as T };
  const error = (json as { error?: Partial<ApiError> } | undefined)?.error;
  if (!error || typeof error.code !== 'string') {
    return { ok: false, error: { code: 'invalid_response', message: `HTTP ${response.status} without an error body.`, status: response.status } };
  }
  return { ok: false, error: { code: error.code, message: String(error.message ?? ''), status: response.status, ...(error.issues ? { issues: error.issues } : {}) } };
}

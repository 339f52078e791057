import { TesseraError } from './errors.js';
import type {
  CreateLicenseInput,
  License,
  LicensePage,
  LicenseTokenConfig,
  LicenseTokenConfigInput,
  LicenseValidation,
  PortalSession,
  Product,
  ProductFields,
  UpdateLicenseInput,
} from './types.js';

export interface TesseraOptions {
  /** An API key (sk_...); defaults to the TESSERA_API_KEY environment variable. */
  apiKey?: string;
  /** The server, e.g. https://licensing.example.com; defaults to TESSERA_BASE_URL. */
  baseUrl?: string;
  /** Per request (default 30 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface Call {
  method: Method;
  path: string;
  body?: unknown;
  /** A non-JSON body (an image), sent as is. */
  bytes?: { data: Uint8Array<ArrayBuffer>; contentType: string };
  licenseKey?: string;
  query?: Record<string, string | number | undefined>;
}

/**
 * Typed client for the Tessera server API. Every method resolves with the response body or
 * rejects with a TesseraError carrying the HTTP status and the service's `error.code`.
 */
export class Tessera {
  private readonly apiKey: string;
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly fetch: typeof fetch;

  constructor(options: TesseraOptions = {}) {
    const apiKey = options.apiKey ?? process.env.TESSERA_API_KEY;
    const baseUrl = options.baseUrl ?? process.env.TESSERA_BASE_URL;
    if (!apiKey) throw new Error('Tessera: no API key (options.apiKey or TESSERA_API_KEY)');
    if (!baseUrl) throw new Error('Tessera: no server address (options.baseUrl or TESSERA_BASE_URL)');
    this.apiKey = apiKey;
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  readonly products = {
    create: (fields: ProductFields) => this.call<Product>({ method: 'POST', path: '/products', body: fields }),
    list: () => this.call<Product[]>({ method: 'GET', path: '/products' }),
    get: (productId: string) => this.call<Product>({ method: 'GET', path: `/products/${enc(productId)}` }),
    update: (productId: string, fields: Partial<ProductFields>) => this.call<Product>({ method: 'PATCH', path: `/products/${enc(productId)}`, body: fields }),
    /** Refused (product_has_licenses) while it has licenses, unless `force` deletes them too. */
    delete: (productId: string, options: { force?: boolean } = {}) =>
      this.call<void>({ method: 'DELETE', path: `/products/${enc(productId)}`, query: { force: options.force ? 'true' : undefined } }),
    /** PNG, JPEG or WebP bytes, at most 1 MiB (the type is checked from the bytes); accounts on the plus plan only. Shown in purchase e-mails. */
    setImage: (productId: string, data: Uint8Array<ArrayBuffer>, contentType: 'image/png' | 'image/jpeg' | 'image/webp') =>
      this.call<Product>({ method: 'PUT', path: `/products/${enc(productId)}/image`, bytes: { data, contentType } }),
    deleteImage: (productId: string) => this.call<void>({ method: 'DELETE', path: `/products/${enc(productId)}/image` }),
  };

  readonly licenses = {
    create: (input: CreateLicenseInput) => this.call<License>({ method: 'POST', path: '/licenses', body: input }),
    get: (licenseKey: string) => this.call<License>({ method: 'GET', path: '/licenses', licenseKey }),
    update: (licenseKey: string, input: UpdateLicenseInput) => this.call<License>({ method: 'PATCH', path: '/licenses', licenseKey, body: input }),
    delete: (licenseKey: string) => this.call<void>({ method: 'DELETE', path: '/licenses', licenseKey }),
    /** Queues the purchase e-mail to the license's address again (400 when it has none). */
    sendEmail: (licenseKey: string) => this.call<void>({ method: 'POST', path: '/licenses/send-email', licenseKey }),
    /** A new key for a leaked one: devices, purchases and audit stay; the old key stops working. `notify` e-mails the customer the new key. */
    rotateKey: (licenseKey: string, options: { notify?: boolean } = {}) => this.call<License>({ method: 'POST', path: '/licenses/rotate-key', licenseKey, body: options }),
    revoke: (licenseKey: string) => this.call<License>({ method: 'PATCH', path: '/licenses', licenseKey, body: { revoked: true } }),
    list: (productId: string, options: { email?: string; limit?: number; cursor?: string } = {}) =>
      this.call<LicensePage>({ method: 'GET', path: `/products/${enc(productId)}/licenses`, query: options }),
    /** Every license of a product, page by page. */
    listAll: (productId: string, options: { email?: string } = {}) => this.allLicenses(productId, options),
    activate: (licenseKey: string, input: { productId: string; device: { identifier: string; name: string } }) =>
      this.call<License>({ method: 'POST', path: '/licenses/activate', licenseKey, body: input }),
    validate: (licenseKey: string, input: { productId?: string; deviceIdentifier?: string } = {}) =>
      this.call<LicenseValidation>({ method: 'POST', path: '/licenses/validate', licenseKey, body: input }),
  };

  readonly devices = {
    remove: (licenseKey: string, deviceIdentifier: string) =>
      this.call<License>({ method: 'POST', path: `/licenses/devices/${enc(deviceIdentifier)}/remove`, licenseKey }),
    reset: (licenseKey: string) => this.call<License>({ method: 'POST', path: '/licenses/devices/reset', licenseKey }),
  };

  readonly licenseTokens = {
    get: (productId: string) => this.call<LicenseTokenConfig>({ method: 'GET', path: tokenPath(productId) }),
    /** Enabling the first time generates a P-256 key pair. */
    update: (productId: string, input: LicenseTokenConfigInput) => this.call<LicenseTokenConfig>({ method: 'PUT', path: tokenPath(productId), body: input }),
    /** Replaces the key pair with a new one: tokens signed before no longer verify with the new key. */
    newKeyPair: (productId: string) => this.call<LicenseTokenConfig>({ method: 'POST', path: `${tokenPath(productId)}/key-pair`, body: {} }),
    copyKeyPair: (productId: string, fromProductId: string) =>
      this.call<LicenseTokenConfig>({ method: 'POST', path: `${tokenPath(productId)}/key-pair`, body: { copyFromProductId: fromProductId } }),
    /** An unencrypted PKCS#8 PEM of a P-256 key. */
    importKeyPair: (productId: string, privateKeyPem: string) =>
      this.call<LicenseTokenConfig>({ method: 'POST', path: `${tokenPath(productId)}/key-pair`, body: { privateKeyPem } }),
  };

  readonly portal = {
    /** A 12-hour portal link for that address, showing only this account's products. */
    createPrivateSession: (email: string) => this.call<PortalSession>({ method: 'POST', path: '/portal/sessions/private', body: { email } }),
  };

  private async *allLicenses(productId: string, options: { email?: string }): AsyncGenerator<License> {
    let cursor: string | undefined;
    do {
      const page = await this.licenses.list(productId, { ...options, limit: 100, cursor });
      yield* page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  private async call<T>({ method, path, body, bytes, licenseKey, query }: Call): Promise<T> {
    const url = new URL(`${this.baseUrl}/api/v1${path}`);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (bytes) headers['content-type'] = bytes.contentType;
    if (licenseKey !== undefined) headers['license-key'] = licenseKey;
    let response: Response;
    let text: string;
    try {
      const payload = bytes ? bytes.data : body === undefined ? undefined : JSON.stringify(body);
      response = await this.fetch(url, { method, headers, body: payload, signal: AbortSignal.timeout(this.timeoutMs) });
      text = await response.text();
    } catch (cause) {
      const timedOut = cause instanceof Error && cause.name === 'TimeoutError';
      throw new TesseraError(0, timedOut ? 'timeout' : 'network_error', timedOut ? `No answer within ${this.timeoutMs} ms` : `Could not reach ${this.baseUrl}: ${String(cause)}`);
    }
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new TesseraError(response.status, 'invalid_response', `HTTP ${response.status} with a body that is not JSON`);
    }
    if (response.ok) return json as T;
    const error = (json as { error?: { code?: unknown; message?: unknown; issues?: { path: string; message: string }[] } } | undefined)?.error;
    const retryAfter = Number(response.headers.get('retry-after')) || undefined;
    if (typeof error?.code !== 'string') throw new TesseraError(response.status, 'invalid_response', `HTTP ${response.status} without an error body`);
    throw new TesseraError(response.status, error.code, String(error.message ?? ''), error.issues, retryAfter);
  }
}

const enc = encodeURIComponent;
const tokenPath = (productId: string) => `/products/${enc(productId)}/license-token`;

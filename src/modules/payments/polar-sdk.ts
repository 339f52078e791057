import type { Polar } from '@polar-sh/sdk';
import type { HTTPClientError } from '@polar-sh/sdk/models/errors/httpclienterrors.js';
import type { PolarError } from '@polar-sh/sdk/models/errors/polarerror.js';
import type { ResponseValidationError } from '@polar-sh/sdk/models/errors/responsevalidationerror.js';
import type { SDKValidationError } from '@polar-sh/sdk/models/errors/sdkvalidationerror.js';

/**
 * @polar-sh/sdk, loaded at the first Polar call instead of at start: its root module brings every
 * model's schema, which cost every server 2.7 s of start-up and about 70 MB of memory (measured:
 * docs/decisions/lazy-modules.md) whether or not any account sells through Polar.
 */
export interface PolarSdk {
  Polar: typeof Polar;
  PolarError: typeof PolarError;
  HTTPClientError: typeof HTTPClientError;
  ResponseValidationError: typeof ResponseValidationError;
  SDKValidationError: typeof SDKValidationError;
}

let loading: Promise<PolarSdk> | undefined;
let loaded: PolarSdk | undefined;

export function polarSdk(): Promise<PolarSdk> {
  loading ??= Promise.all([
    import('@polar-sh/sdk'),
    import('@polar-sh/sdk/models/errors/polarerror.js'),
    import('@polar-sh/sdk/models/errors/httpclienterrors.js'),
    import('@polar-sh/sdk/models/errors/responsevalidationerror.js'),
    import('@polar-sh/sdk/models/errors/sdkvalidationerror.js'),
  ]).then(
    ([root, polar, http, response, validation]) =>
      (loaded = { Polar: root.Polar, PolarError: polar.PolarError, HTTPClientError: http.HTTPClientError, ResponseValidationError: response.ResponseValidationError, SDKValidationError: validation.SDKValidationError }),
    (error: unknown) => {
      loading = undefined; // a failed load (say, a file missing) is tried again at the next call
      throw error;
    },
  );
  return loading;
}

/** The SDK if a call has loaded it: an error can only be one of its classes if so. */
export const loadedPolarSdk = (): PolarSdk | undefined => loaded;

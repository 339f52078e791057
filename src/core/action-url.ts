import { invalidRequest } from './errors.ts';

const PLACEHOLDER = '{key}';

/** An action button link: absolute http(s), optionally holding `{key}`. */
export function checkActionUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url.replaceAll(PLACEHOLDER, 'KEY'));
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw invalidRequest('actionButtonUrl', 'must be an absolute http or https URL');
  }
}

/** Where the link is shown, `{key}` becomes the URL-encoded license key. */
export const renderActionUrl = (url: string, licenseKey: string): string =>
  url.replaceAll(PLACEHOLDER, encodeURIComponent(licenseKey));

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signed double-submit CSRF tokens: the browser holds a random value in an HttpOnly cookie and
 * every form carries HMAC(key, value). Another site can neither read the cookie nor compute the
 * HMAC without the server's secret, so a forged POST never carries a matching pair.
 */
export class Csrf {
  private readonly key: Buffer;

  /** `purpose` (`portal`, `dashboard`) gives each set of pages its own key: a token of one is no token of the other. */
  constructor(secretKey: Buffer, purpose: string) {
    this.key = createHmac('sha256', secretKey).update(`tessera ${purpose} csrf v1`).digest();
  }

  static newBrowserValue(): string {
    return randomBytes(24).toString('base64url');
  }

  /**
   * `binding` ties the token to the signed-in session (a stable id of it, never the cookie's secret
   * value); pages before sign-in pass none. A pair issued to one visitor is then no token for another
   * visitor's session, even when a sibling site injects the cookie.
   */
  token(browserValue: string, binding = ''): string {
    return createHmac('sha256', this.key).update(`${binding}\u0000${browserValue}`).digest('base64url');
  }

  verify(browserValue: string | undefined, token: unknown, binding = ''): boolean {
    if (!browserValue || typeof token !== 'string') return false;
    const expected = Buffer.from(this.token(browserValue, binding));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

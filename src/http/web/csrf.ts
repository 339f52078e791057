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

  token(browserValue: string): string {
    return createHmac('sha256', this.key).update(browserValue).digest('base64url');
  }

  verify(browserValue: string | undefined, token: unknown): boolean {
    if (!browserValue || typeof token !== 'string') return false;
    const expected = Buffer.from(this.token(browserValue));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

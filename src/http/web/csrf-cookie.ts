import type { FastifyReply, FastifyRequest } from 'fastify';
import { cookie, readCookie } from './cookies.ts';
import { Csrf } from './csrf.ts';

/**
 * A set of pages' CSRF pair: the browser's random value in an HttpOnly cookie (set on first sight)
 * and the token forms carry. `binding` is the signed-in session's stable id, or none before sign-in.
 */
export class CsrfCookie {
  constructor(
    private readonly csrf: Csrf,
    private readonly name: string,
    private readonly cookieOptions: { path: string; secure: boolean },
  ) {}

  /** The token for a form on the page being sent (sets the cookie when the browser has none yet). */
  token(req: FastifyRequest, reply: FastifyReply, binding?: string): string {
    let value = readCookie(req.headers.cookie, this.name);
    if (!value) {
      value = Csrf.newBrowserValue();
      void reply.header('set-cookie', cookie(this.name, value, this.cookieOptions));
    }
    return this.csrf.token(value, binding);
  }

  verify(req: FastifyRequest, token: unknown, binding?: string): boolean {
    return this.csrf.verify(readCookie(req.headers.cookie, this.name), token, binding);
  }
}

/** Minimal cookie reading and writing for server-rendered pages (a few cookies; no dependency needed). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      // Our values are base64url: anything else was not set by us.
      return /^[A-Za-z0-9_-]{1,128}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

export interface CookieOptions {
  /** The pages the cookie belongs to (`/portal`, `/dashboard`). */
  path: string;
  secure: boolean;
  /** Seconds; 0 deletes the cookie. Absent: a browser-session cookie. */
  maxAge?: number;
}

/** HttpOnly, SameSite=Lax (an e-mailed link is a cross-site navigation), scoped to `path`. */
export function cookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${value}`, `Path=${options.path}`, 'HttpOnly', 'SameSite=Lax'];
  if (options.maxAge !== undefined) parts.push(`Max-Age=${options.maxAge}`);
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

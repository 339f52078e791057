import { Secret, TOTP } from 'otpauth';
import { expect } from 'vitest';
import type { WebBrowser } from './dashboard.ts';

/** The code an authenticator app shows for `secret`, `stepsFromNow` periods away (the server accepts one step of drift). */
export const codeFor = (secret: string, stepsFromNow = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: Date.now() + stepsFromNow * 30_000 });

/** Turns two-factor on through the pages; returns the key and the recovery codes shown once. */
export async function enrol(browser: WebBrowser): Promise<{ secret: string; codes: string[] }> {
  await browser.request('GET', '/dashboard/account/two-factor');
  const started = await browser.request('POST', '/dashboard/account/two-factor/start', { csrf: browser.csrf });
  expect(started.body).toMatch(/<svg role="img" aria-label="QR code for your authenticator app"/);
  const secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!;
  const wrong = await browser.request('POST', '/dashboard/account/two-factor/confirm', { code: '000000' === codeFor(secret, -1) ? '111111' : '000000', csrf: browser.csrf });
  expect(wrong.status).toBe(400);
  expect(wrong.body).toContain('id="f-code-error"');
  const on = await browser.request('POST', '/dashboard/account/two-factor/confirm', { code: codeFor(secret, -1), csrf: browser.csrf });
  expect(on.status).toBe(200);
  const codes = [...on.body.matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1]!);
  expect(codes).toHaveLength(10);
  return { secret, codes };
}


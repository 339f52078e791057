import { expect } from 'vitest';
import type { TestContext } from './app.ts';
import { PortalBrowser } from './mail.ts';

/** A browser on the dashboard (the same cookie jar and CSRF reading as the portal's). */
export { PortalBrowser as WebBrowser };

export const PASSWORD = 'correct horse battery';

/** Logs in through the form; returns the browser, on a signed-in page (its CSRF token bound to the session). */
export async function signIn(ctx: TestContext, email: string, password = PASSWORD, remoteAddress?: string): Promise<PortalBrowser> {
  const browser = new PortalBrowser(ctx, remoteAddress);
  await browser.request('GET', '/dashboard/login');
  const res = await browser.request('POST', '/dashboard/login', { email, password, csrf: browser.csrf });
  expect(res.status, res.body).toBe(303);
  expect((await browser.request('GET', '/dashboard/account')).status).toBe(200);
  return browser;
}

/** The page's text content without tags (what a reader sees), for messages. */
export const textOf = (body: string) => body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

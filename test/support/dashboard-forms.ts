import { describe, expect, it } from 'vitest';
import { createTenant, type Tenant, type TestContext } from './app.ts';
import { signIn, textOf, WebBrowser } from './dashboard.ts';

/** Pages that list the account's own objects: another account sees its own list there (200), not a 404. */
const LIST_PAGES = ['/dashboard/api-keys', '/dashboard/payments', '/dashboard/payments/purchases'];
const LIST_EXACT = ['/dashboard/webhooks'];

export type Fields = Record<string, string>;

/** A multipart/form-data body as a browser sends it: text fields, then an optional file (field `image` unless named). */
export function multipartBody(fields: Fields, file?: { name: string; type: string; data: Buffer; field?: string }) {
  const boundary = '----tessera-test-boundary';
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  if (file) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'image'}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`), file.data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** One form of the dashboard: where it is, what it posts, what is stored, and which object it acts on. */
export interface FormCase {
  name: string;
  /** Builds the objects the form needs in the tenant's account. */
  prepare(ctx: TestContext, t: Tenant): Promise<{
    page: string;
    action: string;
    good: Fields;
    bad?: { fields: Fields; message: string };
    /** A snapshot of what the form changes: equal before and after a refused post. */
    state(): Promise<unknown>;
    /** Whether the form acts on one object of the account (another account posting to it gets 404). */
    owned: boolean;
    /** Destructive: without confirm=yes the post only asks. */
    destructive?: boolean;
  }>;
}

/**
 * The checks every dashboard form gets: it does its work (a destructive one asks first), bad input
 * shows the form again with the message and stores nothing, a missing or wrong CSRF token is a
 * 403, another account's object is a 404, and a logged-out post goes to the log-in page.
 */
export function describeFormCases(ctx: TestContext, cases: FormCase[]): void {
  for (const c of cases) {
    describe(c.name, () => {
      it('does its work, and a destructive one asks first', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        const browser = await signIn(ctx, t.email);
        await browser.request('GET', f.page);
        const csrf = browser.csrf;
        const before = await f.state();
        if (f.destructive) {
          const ask = await browser.request('POST', f.action, { ...f.good, csrf });
          expect(ask.status).toBe(200);
          expect(ask.body).toContain('name="confirm" value="yes"');
          expect(ask.body).toContain('>Cancel</a>');
          expect(await f.state()).toEqual(before);
        }
        const res = await browser.request('POST', f.action, { ...f.good, csrf, ...(f.destructive ? { confirm: 'yes' } : {}) });
        expect([200, 303], res.body).toContain(res.status);
        expect(await f.state()).not.toEqual(before);
        if (res.status === 303) {
          const next = await browser.request('GET', res.headers.location as string);
          expect(next.status).toBe(200);
          expect(next.body).toMatch(/class="notice ok" role="status"/);
        }
      });

      it('shows the form again with the message on bad input, storing nothing', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        if (!f.bad) return;
        const browser = await signIn(ctx, t.email);
        await browser.request('GET', f.page);
        const before = await f.state();
        const res = await browser.request('POST', f.action, { ...f.bad.fields, csrf: browser.csrf });
        expect(res.status).toBe(400);
        expect(textOf(res.body)).toContain(f.bad.message);
        expect(res.body).toContain('<form');
        expect(await f.state()).toEqual(before);
      });

      it('refuses a missing or wrong CSRF token with 403, storing nothing, whatever the body type', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        const browser = await signIn(ctx, t.email);
        const before = await f.state();
        for (const csrf of [undefined, 'A'.repeat(43)]) {
          const fields = { ...f.good, confirm: 'yes', ...(csrf ? { csrf } : {}) };
          const res = await browser.request('POST', f.action, fields);
          expect(res.status).toBe(403);
          // The same fields as JSON, and as multipart/form-data (what a form with that enctype on another
          // site sends): a form that takes no upload refuses multipart before reading it (415).
          for (const [body, status] of [
            [{ payload: JSON.stringify(fields), contentType: 'application/json' }, 403],
            [multipartBody(fields), 415],
          ] as const) {
            const other = await ctx.app.inject({ method: 'POST', url: f.action, headers: { cookie: browser.cookieHeader, 'content-type': body.contentType }, payload: body.payload });
            expect(other.statusCode, `${body.contentType.split(';')[0]} without a token`).toBe(status);
          }
        }
        expect(await f.state()).toEqual(before);
      });

      it("answers 404 to another account, storing nothing", async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        if (!f.owned) return;
        const intruder = await signIn(ctx, (await createTenant(ctx)).email);
        await intruder.request('GET', '/dashboard');
        const csrf = intruder.csrf;
        const before = await f.state();
        expect((await intruder.request('GET', f.page)).status).toBe(LIST_PAGES.some((p) => f.page.startsWith(p)) || LIST_EXACT.includes(f.page) ? 200 : 404);
        const res = await intruder.request('POST', f.action, { ...f.good, confirm: 'yes', csrf });
        expect(res.status).toBe(404);
        expect(await f.state()).toEqual(before);
      });

      it('sends a logged-out visitor to the log-in page, storing nothing', async () => {
        const t = await createTenant(ctx);
        const f = await c.prepare(ctx, t);
        const visitor = new WebBrowser(ctx);
        const before = await f.state();
        expect((await visitor.request('GET', f.page)).headers.location).toMatch(/^\/dashboard\/login/);
        const res = await visitor.request('POST', f.action, { ...f.good, confirm: 'yes', csrf: 'A'.repeat(43) });
        expect(res.status).toBe(303);
        expect(res.headers.location).toBe('/dashboard/login');
        expect(await f.state()).toEqual(before);
      });
    });
  }
}

import type { QueuedMail, MailTransport } from '../../src/modules/mail/types.ts';
import type { Store } from '../../src/storage/index.ts';
import { call, type TestContext } from './app.ts';

/** A transport that keeps what it is given; `failures` makes the next sends throw (a refusing server). */
export class CapturingTransport implements MailTransport {
  readonly description = 'capture';
  readonly sent: QueuedMail[] = [];
  failures = 0;

  async send(mail: QueuedMail): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('550 mailbox unavailable');
    }
    this.sent.push(mail);
  }

  close(): void {}

  /** Waits until a message to `to` (matching `kind` when given) has been delivered. */
  async waitFor(to: string, kind?: string, timeoutMs = 5000): Promise<QueuedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.sent.find((m) => m.to === to && (kind === undefined || m.kind === kind));
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no ${kind ?? ''} e-mail to ${to} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The portal link inside an access-link e-mail. */
export function portalLinkIn(mail: QueuedMail): string {
  const match = /https?:\/\/[^\s"<>]+\/portal\?token=[A-Za-z0-9_-]+/.exec(mail.text);
  if (!match) throw new Error(`no portal link in: ${mail.text}`);
  return match[0];
}

/** A browser stand-in over app.inject: keeps cookies, reads the CSRF token of the last page. */
export class PortalBrowser {
  private readonly cookies = new Map<string, string>();
  lastHtml = '';

  /** `remoteAddress`: the client address the server sees (per-client rate limits). The dashboard's tests use it too. */
  constructor(
    private readonly ctx: TestContext,
    private readonly remoteAddress = '127.0.0.1',
  ) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  get csrf(): string {
    const match = /name="csrf" value="([^"]+)"/.exec(this.lastHtml);
    if (!match) throw new Error('no CSRF token on the last page');
    return match[1]!;
  }

  async request(method: 'GET' | 'POST', url: string, form?: Record<string, string>) {
    const res = await this.ctx.app.inject({
      method,
      url: url.replace(/^https?:\/\/[^/]+/, ''),
      remoteAddress: this.remoteAddress,
      headers: {
        ...(this.cookies.size ? { cookie: this.cookieHeader } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      payload: form ? new URLSearchParams(form).toString() : undefined,
    });
    const setCookie = res.headers['set-cookie'];
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair, ...attributes] = line.split(';');
      const [name, value] = pair!.split('=') as [string, string];
      if (attributes.some((a) => a.trim() === 'Max-Age=0')) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    if (res.headers['content-type']?.toString().startsWith('text/html')) this.lastHtml = res.body;
    return { status: res.statusCode, body: res.body, headers: res.headers };
  }

  /** Requests a link for `email` through the form, as a person would. */
  async requestLink(email: string) {
    await this.request('GET', '/portal/request');
    return this.request('POST', '/portal/request', { email, csrf: this.csrf });
  }

  /** Opens a link and follows the redirect to the portal page. */
  async open(link: string) {
    const opened = await this.request('GET', link);
    if (opened.status !== 303) return opened;
    return this.request('GET', opened.headers.location as string);
  }
}

/** Activates a device over the server API (portal tests need devices to reset). */
export const activateDevice = (ctx: TestContext, auth: Record<string, string>, key: string, productId: string, identifier: string) =>
  call(ctx, { method: 'POST', url: '/api/v1/licenses/activate', headers: { ...auth, 'license-key': key }, json: { productId, device: { identifier, name: `Laptop ${identifier}` } } });

/** An operator-created private session for `email`, opened in a fresh browser. */
export async function openPrivateSession(ctx: TestContext, auth: Record<string, string>, email: string) {
  const res = await call(ctx, { method: 'POST', url: '/api/v1/portal/sessions/private', headers: auth, json: { email } });
  const browser = new PortalBrowser(ctx);
  await browser.open(res.body.url);
  return { browser, url: res.body.url as string };
}

/** Every e-mail job in the outbox for one address, oldest first (`kind` is the mail's: purchase, portal_link). */
export async function outboxFor(store: Store, to: string) {
  const rows = await store.read.all(store.db.selectFrom('outbox').selectAll().where('kind', '=', 'mail').orderBy('created_at').orderBy('id'));
  return rows
    .map((r) => ({ row: r, mail: JSON.parse(r.payload) as { kind: string; to: string } }))
    .filter(({ mail }) => mail.to === to)
    .map(({ row, mail }) => ({ id: row.id, kind: mail.kind, status: row.status, attempts: row.attempts, lastError: row.last_error }));
}

import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../../src/http/errors.ts';
import { cookie, readCookie } from '../../src/http/web/cookies.ts';
import { Csrf } from '../../src/http/web/csrf.ts';
import { layout, webPages } from '../../src/http/web/pages.ts';
import { html } from '../../src/http/html.ts';

async function pagesApp() {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  await app.register(async (pages) => {
    webPages(pages, { name: 'test pages', assetsPrefix: '/pages/assets/', formLimit: 64, errorPage: (status) => `<p>error page ${status}</p>` });
    pages.post('/pages/form', async (req) => req.body);
    pages.get('/pages/boom', async () => {
      throw new Error('secret stack detail');
    });
    pages.get('/pages/assets/a.css', async (_req, reply) => reply.type('text/css').send('x{}'));
  });
  return app;
}

describe('web kit (shared by the portal and the dashboard)', () => {
  it('parses urlencoded forms and refuses one over the limit with an HTML page', async () => {
    const app = await pagesApp();
    const ok = await app.inject({ method: 'POST', url: '/pages/form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1&b=%C3%A9' });
    expect(ok.json()).toEqual({ a: '1', b: 'é' });
    const big = await app.inject({ method: 'POST', url: '/pages/form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `a=${'x'.repeat(100)}` });
    expect(big.statusCode).toBe(413);
    expect(big.headers['content-type']).toMatch(/^text\/html/);
    expect(big.body).toBe('<p>error page 413</p>');
    await app.close();
  });

  it('answers an unexpected error with the error page, never the stack or message', async () => {
    const app = await pagesApp();
    const res = await app.inject({ method: 'GET', url: '/pages/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe('<p>error page 500</p>');
    expect(res.body).not.toContain('secret stack detail');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    const asset = await app.inject({ method: 'GET', url: '/pages/assets/a.css' });
    expect(asset.headers['content-security-policy']).toBeUndefined();
    expect(asset.headers['x-content-type-options']).toBe('nosniff');
    await app.close();
  });

  it('writes HttpOnly, SameSite=Lax cookies scoped to their pages, Secure when asked, and reads back only its own values', () => {
    expect(cookie('s', 'abc', { path: '/dashboard', secure: true, maxAge: 60 })).toBe('s=abc; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=60; Secure');
    expect(cookie('s', '', { path: '/portal', secure: false, maxAge: 0 })).toBe('s=; Path=/portal; HttpOnly; SameSite=Lax; Max-Age=0');
    expect(readCookie('a=1; s=abc_-9', 's')).toBe('abc_-9');
    expect(readCookie('s=<script>', 's')).toBeUndefined();
  });

  it('gives each set of pages its own CSRF key', () => {
    const secret = Buffer.alloc(32, 7);
    const portal = new Csrf(secret, 'portal');
    const dashboard = new Csrf(secret, 'dashboard');
    const value = Csrf.newBrowserValue();
    expect(portal.verify(value, portal.token(value))).toBe(true);
    expect(dashboard.verify(value, portal.token(value))).toBe(false);
    expect(portal.verify(undefined, portal.token(value))).toBe(false);
  });

  it('escapes what goes into the layout', () => {
    const page = layout({ title: '<x>', site: 'S', home: '/', stylesheet: '/a.css', script: '/a.js', content: html`<p>${'<b>'}</p>`, footer: 'f' });
    expect(page).toContain('<title>&lt;x&gt; · S</title>');
    expect(page).toContain('<p>&lt;b&gt;</p>');
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { isForbiddenAddress } from '../../src/modules/webhooks/address-guard.ts';
import { WebhookSender } from '../../src/modules/webhooks/sender.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

describe('the webhook address guard', () => {
  it.each([
    '127.0.0.1', '127.255.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255',
    '::', '::1', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd12:3456::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::1', '2001:0:4136:e378::1',
    '[::1]', 'not-an-address',
    // IPv4-translated (SIIT, ::ffff:0:0:0/96), written every way; and the other IPv4-embedding forms.
    '::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '0:0:0:0:ffff:0:a00:1', '[::ffff:0:127.0.0.1]', '::ffff:0:8.8.8.8',
    '64:ff9b:1::a00:1', '2002:808:808::1', '2001:0:808:808::1',
    // ISATAP interface ids (…:0:5efe:a.b.c.d, …:200:5efe:a.b.c.d) carrying a private IPv4 address.
    '2607:f8b0:4005:80c::5efe:10.0.0.1', '2607:f8b0:4005:80c:200:5efe:7f00:1', '2607:f8b0::100:5efe:a9fe:a9fe',
  ])('refuses %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '172.32.0.1', '192.169.0.1', '2607:f8b0:4005:80c::5efe:8.8.8.8', '2607:f8b0::1:5efe:a00:1'])('allows the public address %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it('refuses at delivery time too: a host resolving to loopback, an IP literal, IPv6 loopback (nothing reaches the receiver)', async () => {
    const receiver = await WebhookReceiver.start();
    const sender = new WebhookSender({ allowPrivate: false, connectTimeoutMs: 1000, timeoutMs: 2000, maxSockets: 4 });
    try {
      const port = new URL(receiver.url).port;
      for (const url of [`http://localhost:${port}/hook`, receiver.url, `http://[::1]:${port}/hook`, `http://[::ffff:127.0.0.1]:${port}/hook`, `http://[::ffff:0:127.0.0.1]:${port}/hook`]) {
        const result = await sender.post(url, '{}', {});
        expect(result, url).toMatchObject({ statusCode: null, error: expect.stringMatching(/private, loopback or link-local/) });
      }
      expect(receiver.received).toEqual([]);
      // The same sender with the guard off reaches it: the refusal above was the guard.
      const open = new WebhookSender({ allowPrivate: true, connectTimeoutMs: 1000, timeoutMs: 2000, maxSockets: 4 });
      expect(await open.post(`http://localhost:${port}/hook`, '{"id":"x","type":"t","data":{}}', {})).toMatchObject({ statusCode: 200 });
      open.close();
    } finally {
      sender.close();
      await receiver.close();
    }
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const receiver = await WebhookReceiver.start();
    receiver.answer(302);
    const sender = new WebhookSender({ allowPrivate: true, connectTimeoutMs: 1000, timeoutMs: 2000, maxSockets: 4 });
    expect(await sender.post(receiver.url, '{"id":"x","type":"t","data":{}}', {})).toMatchObject({ statusCode: 302 });
    expect(receiver.received).toHaveLength(1);
    sender.close();
    await receiver.close();
  });
});

forEachStore('webhooks API (security)', (kind) => {
  const ctx = useTestApp(kind); // WEBHOOK_ALLOW_PRIVATE unset: the guard is on
  let a: Tenant;
  let b: Tenant;
  beforeAll(async () => {
    a = await createTenant(ctx);
    b = await createTenant(ctx);
  });

  it.each([
    'http://127.0.0.1/hook',
    'http://localhost:8080/hook',
    'http://2130706433/hook',
    'http://0x7f.1/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:0:127.0.0.1]/hook',
    'http://[0:0:0:0:ffff:0:a9fe:a9fe]/hook',
    'http://[2607:f8b0::5efe:192.168.0.1]/hook',
    'http://[fe80::1]/hook',
    'https://169.254.169.254/latest/meta-data',
    'http://10.0.0.8/hook',
    'http://192.168.0.10/hook',
  ])('refuses %s at creation (400, nothing stored)', async (url) => {
    const res = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: a.auth, json: { url, events: ['*'] } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0]).toMatchObject({ path: 'url', message: expect.stringMatching(/private, loopback or link-local/) });
    expect((await call(ctx, { method: 'GET', url: '/api/v1/webhooks', headers: a.auth })).body.data).toEqual([]);
  });

  it("never shows, changes or delivers to another account's endpoint (404)", async () => {
    // A public IP literal passes the guard without any DNS or network at creation.
    const created = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: b.auth, json: { url: 'http://93.184.216.34/hook', events: ['*'] } });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    for (const [method, url] of [
      ['GET', `/api/v1/webhooks/${id}`],
      ['PATCH', `/api/v1/webhooks/${id}`],
      ['DELETE', `/api/v1/webhooks/${id}`],
      ['GET', `/api/v1/webhooks/${id}/deliveries`],
      ['POST', `/api/v1/webhooks/${id}/deliveries/wd_any/redeliver`],
    ] as const) {
      const res = await call(ctx, { method, url, headers: a.auth, ...(method === 'PATCH' ? { json: { enabled: false } } : {}) });
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await call(ctx, { method: 'GET', url: '/api/v1/webhooks', headers: a.auth })).body.data).toEqual([]);
    expect((await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${id}`, headers: b.auth })).body).toMatchObject({ id, enabled: true });

    // a's changes never become deliveries to b's endpoint (b's own do: webhooks.happy).
    const productA = await createProduct(ctx, a);
    await createLicense(ctx, a, productA.id);
    expect(await ctx.store.read.all(ctx.store.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id))).toEqual([]);
    await call(ctx, { method: 'DELETE', url: `/api/v1/webhooks/${id}`, headers: b.auth });
  });

  it('logs a refused delivery when a host resolves to a forbidden address at delivery time (DNS rebinding)', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const tenant = await createTenant(ctx);
      // Stored as if it had passed the check at creation, then "rebound" to loopback.
      const { endpoint } = await ctxCreateAllowed(tenant, `http://localhost:${new URL(receiver.url).port}/hook`);
      const product = await createProduct(ctx, tenant);
      await createLicense(ctx, tenant, product.id);
      const delivery = await waitFor(async () => {
        const res = await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries`, headers: tenant.auth });
        return res.body.data.find((d: any) => d.attempts.length > 0);
      });
      expect(delivery).toMatchObject({ status: 'pending', attempts: [{ statusCode: null, success: false, error: expect.stringMatching(/localhost resolves to (127\.0\.0\.1|::1)/) }] });
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  /** An endpoint stored past the creation check (as an earlier DNS answer would have let it). */
  async function ctxCreateAllowed(tenant: Tenant, url: string) {
    const { WebhookService } = await import('../../src/modules/webhooks/service.ts');
    const { SqlWebhookRepository } = await import('../../src/modules/webhooks/repository.ts');
    const { SecretBox } = await import('../../src/core/secret-box.ts');
    const permissive = new WebhookService(new SqlWebhookRepository(ctx.store), ctx.services.units, ctx.services.outbox, ctx.services.licenses, new SecretBox(ctx.config.secretKey, 'webhook-secrets'), true);
    return permissive.create(cliPrincipal(tenant.accountId), { url, events: ['*'] });
  }

});

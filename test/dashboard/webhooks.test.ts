import { describe, expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { describeFormCases, type FormCase } from '../support/dashboard-forms.ts';
import { forEachStore } from '../support/stores.ts';
import { addMember } from '../support/members.ts';
import { waitFor } from '../support/wait.ts';
import { useWebhookReceiver, WebhookReceiver } from '../support/webhook-receiver.ts';

const XSS = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`;

const endpoints = (ctx: TestContext, t: Tenant) => () => ctx.store.read.all(ctx.store.db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', t.accountId));
const deliveries = (ctx: TestContext, endpointId: string) => () => ctx.store.read.all(ctx.store.db.selectFrom('webhook_deliveries').select(['id', 'status', 'attempts']).where('endpoint_id', '=', endpointId).orderBy('id'));

async function createEndpoint(ctx: TestContext, t: Tenant, url: string, events = ['*']) {
  const res = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: t.auth, json: { url, events } });
  if (res.status !== 200) throw new Error(`createEndpoint: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; secret: string };
}

/** An endpoint with one delivery (a license was created), its first attempt made. */
async function withDelivery(ctx: TestContext, t: Tenant, url: string) {
  const endpoint = await createEndpoint(ctx, t, url);
  await createLicense(ctx, t, (await createProduct(ctx, t)).id);
  const [delivery] = await waitFor(async () => {
    const rows = await deliveries(ctx, endpoint.id)();
    return rows.length > 0 && Number(rows[0]!.attempts) > 0 ? rows : undefined;
  });
  return { endpoint, delivery: delivery! };
}

function cases(receiver: () => WebhookReceiver): FormCase[] {
  return [
    {
      name: 'add a webhook endpoint',
      prepare: async (ctx, t) => ({
        page: '/dashboard/webhooks',
        action: '/dashboard/webhooks',
        good: { url: receiver().url, 'event_license.created': 'on', 'event_purchase.completed': 'on', description: 'Ops' },
        bad: { fields: { url: receiver().url, description: 'no events' }, message: 'Events needs at least one choice.' },
        state: endpoints(ctx, t),
        owned: false,
      }),
    },
    {
      name: 'delete a webhook endpoint',
      prepare: async (ctx, t) => {
        const e = await createEndpoint(ctx, t, receiver().url);
        return { page: `/dashboard/webhooks/${e.id}`, action: `/dashboard/webhooks/${e.id}/delete`, good: {}, state: endpoints(ctx, t), owned: true, destructive: true };
      },
    },
    {
      name: 're-enable a webhook endpoint',
      prepare: async (ctx, t) => {
        const e = await createEndpoint(ctx, t, receiver().url);
        await call(ctx, { method: 'PATCH', url: `/api/v1/webhooks/${e.id}`, headers: t.auth, json: { enabled: false } });
        return { page: `/dashboard/webhooks/${e.id}`, action: `/dashboard/webhooks/${e.id}/enable`, good: {}, state: endpoints(ctx, t), owned: true };
      },
    },
    {
      name: 'edit a webhook endpoint',
      prepare: async (ctx, t) => {
        const e = await createEndpoint(ctx, t, receiver().url);
        return {
          page: `/dashboard/webhooks/${e.id}/edit`,
          action: `/dashboard/webhooks/${e.id}/edit`,
          good: { url: `${receiver().url}?v=2`, 'event_device.activated': 'on', description: 'Edited', enabled: 'on' },
          bad: { fields: { url: receiver().url, description: 'no events', enabled: 'on' }, message: 'Events needs at least one choice.' },
          state: endpoints(ctx, t),
          owned: true,
        };
      },
    },
    {
      name: 'send a test event',
      prepare: async (ctx, t) => {
        const e = await createEndpoint(ctx, t, receiver().url);
        return { page: `/dashboard/webhooks/${e.id}`, action: `/dashboard/webhooks/${e.id}/test`, good: {}, state: deliveries(ctx, e.id), owned: true };
      },
    },
    {
      name: 'redeliver a webhook event',
      prepare: async (ctx, t) => {
        const { endpoint, delivery } = await withDelivery(ctx, t, receiver().url);
        return {
          page: `/dashboard/webhooks/${endpoint.id}`,
          action: `/dashboard/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`,
          good: {},
          state: async () => (await deliveries(ctx, endpoint.id)()).map((d) => d.id),
          owned: true,
        };
      },
    },
  ];
}

forEachStore('dashboard webhooks', (kind) => {
  // The receiver is on loopback: allowed here (as in the webhooks API tests).
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, app: { mail: { worker: { pollMs: 20 } } } });
  const suite = useWebhookReceiver();

  describeFormCases(ctx, cases(() => suite.receiver));

  it('shows the signing secret once after creation, with a copy button, and lists the endpoint with its events and state', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const empty = await browser.request('GET', '/dashboard/webhooks');
    expect(textOf(empty.body)).toContain('No webhook endpoints yet');
    const res = await browser.request('POST', '/dashboard/webhooks', { url: suite.receiver.url, allEvents: 'on', 'event_license.created': 'on', description: XSS, csrf: browser.csrf });
    expect(res.status).toBe(200);
    const secret = /id="new-webhook-secret"[^>]*>(whsec_[^<]+)</.exec(res.body)![1]!;
    expect(res.body).toContain('data-copy-target="new-webhook-secret"');
    const [row] = await endpoints(ctx, t)();
    expect(JSON.parse(row!.events as unknown as string)).toEqual(['*']);
    expect(JSON.stringify(row)).not.toContain(secret);
    const list = await browser.request('GET', '/dashboard/webhooks');
    expect(list.body).not.toContain(secret);
    expect(list.body).not.toContain('<script>alert');
    expect(textOf(list.body)).toContain('All events');
    expect(textOf(list.body)).toContain('Enabled');
    // The secret signs deliveries: a license change reaches the receiver signed with it.
    const before = suite.receiver.received.length;
    await createLicense(ctx, t, (await createProduct(ctx, t)).id);
    await waitFor(() => suite.receiver.received.length > before);
    expect(suite.receiver.received.at(-1)!.headers['tessera-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it('refuses a URL that is not http(s) with the message beside the field, and keeps the ticked events', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    await browser.request('GET', '/dashboard/webhooks');
    const res = await browser.request('POST', '/dashboard/webhooks', { url: `javascript:${XSS}`, 'event_device.activated': 'on', csrf: browser.csrf });
    expect(res.status).toBe(400);
    expect(textOf(res.body)).toContain('URL must be an http:// or https:// URL.');
    expect(res.body).toMatch(/name="event_device.activated" type="checkbox" value="on" checked/);
    expect(res.body).not.toContain('<script>alert');
    expect(await endpoints(ctx, t)()).toEqual([]);
  });

  it("pages an endpoint's deliveries with their attempts, and redelivers one as a new delivery", async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    // A receiver of its own that answers 503: no other test's delivery takes its answer.
    const failing = await WebhookReceiver.start();
    failing.fallback = 503;
    const { endpoint, delivery } = await withDelivery(ctx, t, failing.url).finally(() => failing.close());
    const page = await browser.request('GET', `/dashboard/webhooks/${endpoint.id}`);
    const text = textOf(page.body);
    expect(text).toContain('license.created');
    expect(text).toMatch(/Attempts \(1\)/);
    expect(text).toContain('503');
    expect(text).toMatch(/\d+ ms/);
    const again = await browser.request('POST', `/dashboard/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`, { csrf: browser.csrf });
    expect(again.status).toBe(303);
    expect((await deliveries(ctx, endpoint.id)()).length).toBe(2);
    expect(textOf((await browser.request('GET', again.headers.location as string)).body)).toContain('queued for delivery again');
  });

  it('pages deliveries by keyset, newest first', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const endpoint = await createEndpoint(ctx, t, suite.receiver.url, ['license.created']);
    const product = await createProduct(ctx, t);
    for (let i = 0; i < 26; i++) await createLicense(ctx, t, product.id);
    const first = await browser.request('GET', `/dashboard/webhooks/${endpoint.id}`);
    const rows = (body: string) => (body.match(/<tr><td><a href="[^"]+"><code>license\.created<\/code>/g) ?? []).length;
    expect(rows(first.body)).toBe(25);
    const next = /href="(\/dashboard\/webhooks\/[^"?]+\?cursor=[^"]+)"/.exec(first.body)![1]!;
    expect(rows((await browser.request('GET', next)).body)).toBe(1);
  });

  it('a disabled endpoint says to enable it before redelivering', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const { endpoint, delivery } = await withDelivery(ctx, t, suite.receiver.url);
    await call(ctx, { method: 'PATCH', url: `/api/v1/webhooks/${endpoint.id}`, headers: t.auth, json: { enabled: false } });
    await browser.request('GET', `/dashboard/webhooks/${endpoint.id}`);
    const res = await browser.request('POST', `/dashboard/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`, { csrf: browser.csrf });
    expect(res.status).toBe(400);
    expect(textOf(res.body)).toContain('Enable it first');
    expect(textOf(res.body)).toContain('Disabled');
    expect(await deliveries(ctx, endpoint.id)()).toHaveLength(1);
  });

  it('edits an endpoint: the form shows it as it is, saves URL, events, description and state, and keeps the secret', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const e = await createEndpoint(ctx, t, suite.receiver.url, ['license.created', 'device.removed']);
    const sealed = async () => (await endpoints(ctx, t)())[0]!.secret_sealed;
    const secretBefore = await sealed();
    const form = await browser.request('GET', `/dashboard/webhooks/${e.id}/edit`);
    expect(form.status).toBe(200);
    expect(form.body).toMatch(/name="event_license.created" type="checkbox" value="on" checked/);
    expect(form.body).toMatch(/name="event_device.removed" type="checkbox" value="on" checked/);
    expect(form.body).not.toMatch(/name="allEvents" type="checkbox" value="on" checked/);
    expect(form.body).toMatch(/name="enabled" type="checkbox" value="on" checked/);
    const res = await browser.request('POST', `/dashboard/webhooks/${e.id}/edit`, { url: suite.receiver.url, allEvents: 'on', description: XSS, csrf: browser.csrf });
    expect(res.status).toBe(303);
    const after = (await endpoints(ctx, t)())[0]!;
    expect(JSON.parse(after.events as unknown as string)).toEqual(['*']);
    expect(after.description).toBe(XSS);
    expect(Number(after.enabled)).toBe(0); // the box was left unticked
    expect(await sealed()).toBe(secretBefore);
    const page = await browser.request('GET', res.headers.location as string);
    expect(textOf(page.body)).toContain('Webhook endpoint saved.');
    expect(page.body).not.toContain('<script>alert');
  });

  it('refuses a bad URL on the edit form with every message at once, changing nothing', async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const e = await createEndpoint(ctx, t, suite.receiver.url);
    const before = await endpoints(ctx, t)();
    await browser.request('GET', `/dashboard/webhooks/${e.id}/edit`);
    const res = await browser.request('POST', `/dashboard/webhooks/${e.id}/edit`, { url: 'ftp://example.com/hook', enabled: 'on', csrf: browser.csrf });
    expect(res.status).toBe(400);
    expect(textOf(res.body)).toContain('Events needs at least one choice.');
    expect(await endpoints(ctx, t)()).toEqual(before);
    const second = await browser.request('POST', `/dashboard/webhooks/${e.id}/edit`, { url: 'ftp://example.com/hook', allEvents: 'on', enabled: 'on', csrf: browser.csrf });
    expect(second.status).toBe(400);
    expect(textOf(second.body)).toContain('URL must be an http:// or https:// URL.');
    expect(await endpoints(ctx, t)()).toEqual(before);
  });

  it("a test event's delivery page shows the request (headers, body) and the answer (status, headers, first 4 KiB, truncated), never the secret", async () => {
    const t = await createTenant(ctx);
    const browser = await signIn(ctx, t.email);
    const failing = await WebhookReceiver.start();
    failing.fallback = { status: 500, body: `<b>oops</b>${'y'.repeat(5000)}`, headers: { 'x-trace': 'abc123' } };
    try {
      const e = await createEndpoint(ctx, t, failing.url, ['purchase.refunded']);
      await browser.request('GET', `/dashboard/webhooks/${e.id}`);
      const sent = await browser.request('POST', `/dashboard/webhooks/${e.id}/test`, { csrf: browser.csrf });
      expect(sent.status).toBe(303);
      expect(textOf((await browser.request('GET', sent.headers.location as string)).body)).toContain('A test event (ping) is queued');
      const [row] = await waitFor(async () => {
        const r = await deliveries(ctx, e.id)();
        return r.length > 0 && Number(r[0]!.attempts) > 0 ? r : undefined;
      });
      const list = await browser.request('GET', `/dashboard/webhooks/${e.id}`);
      expect(list.body).toContain(`href="/dashboard/webhooks/${e.id}/deliveries/${row!.id}"`);
      expect(textOf(list.body)).toContain('Next retry');
      const page = await browser.request('GET', `/dashboard/webhooks/${e.id}/deliveries/${row!.id}`);
      expect(page.status).toBe(200);
      const text = textOf(page.body);
      expect(text).toContain('Delivery of ping');
      expect(text).toContain('tessera-signature');
      expect(page.body).toContain('&quot;type&quot;: &quot;ping&quot;');
      expect(text).toContain('HTTP 500');
      expect(text).toContain('abc123');
      expect(text).toContain('Truncated: the first 4 KiB are shown.');
      expect(page.body).toContain('&lt;b&gt;oops&lt;/b&gt;');
      expect(page.body).not.toContain('<b>oops</b>');
      expect(page.body).not.toContain(e.secret);
      expect(text).toMatch(/Next retry\s*\S/);
      // Another account's delivery page: 404.
      const intruder = await signIn(ctx, (await createTenant(ctx)).email);
      expect((await intruder.request('GET', `/dashboard/webhooks/${e.id}/deliveries/${row!.id}`)).status).toBe(404);
    } finally {
      await failing.close();
    }
  });

  it("a viewer's forged edit or test post is refused (403), nothing changed or queued", async () => {
    const t = await createTenant(ctx);
    const owner = await signIn(ctx, t.email);
    const e = await createEndpoint(ctx, t, suite.receiver.url);
    const { browser: viewer } = await addMember(ctx, owner, 'viewer');
    const seen = await viewer.request('GET', `/dashboard/webhooks/${e.id}`);
    expect(seen.status, seen.body.slice(0, 300)).toBe(200);
    const before = await endpoints(ctx, t)();
    const csrf = viewer.csrf;
    const edit = await viewer.request('POST', `/dashboard/webhooks/${e.id}/edit`, { url: 'https://evil.example/hook', allEvents: 'on', csrf });
    expect(edit.status).toBe(403);
    const test = await viewer.request('POST', `/dashboard/webhooks/${e.id}/test`, { csrf });
    expect(test.status).toBe(403);
    expect(await endpoints(ctx, t)()).toEqual(before);
    expect(await deliveries(ctx, e.id)()).toEqual([]);
    expect((await viewer.request('GET', `/dashboard/webhooks/${e.id}`)).body).not.toContain(`/dashboard/webhooks/${e.id}/edit"`);
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/node/src/index.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

// Issue 36: a test event through the durable delivery path, and each attempt's request and answer.
forEachStore('webhooks API: test events and attempt details', (kind) => {
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, app: { mail: { worker: { pollMs: 20 } } } });
  let tenant: Tenant;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    tenant = await createTenant(ctx);
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver?.close());

  const createEndpoint = async (events: string[], t = tenant) => {
    const res = await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: t.auth, json: { url: receiver.url, events } });
    expect(res.status).toBe(200);
    return res.body as { id: string; secret: string };
  };
  const rows = (endpointId: string) => ctx.store.read.all(ctx.store.db.selectFrom('webhook_deliveries').select(['id', 'event_type']).where('endpoint_id', '=', endpointId));
  const detail = (endpointId: string, deliveryId: string, t = tenant) => call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpointId}/deliveries/${deliveryId}`, headers: t.auth });

  it('sends a signed ping to an endpoint that takes no such event, and shows its request and answer', async () => {
    const endpoint = await createEndpoint(['purchase.refunded']);
    receiver.answer({ status: 200, body: '{"ok":true}', headers: { 'x-receiver': 'yes' } });
    const res = await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/test`, headers: tenant.auth });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^wd_/), eventType: 'ping', status: 'pending', attemptCount: 0 });
    const got = await waitFor(() => receiver.of('ping').find((r) => r.json.data.endpoint.id === endpoint.id));
    expect(got.json).toMatchObject({ id: expect.stringMatching(/^evt_/), type: 'ping', data: { endpoint: { id: endpoint.id, url: receiver.url } } });
    expect(verifyWebhook(got.body, got.headers['tessera-signature'] as string, endpoint.secret)).toMatchObject({ type: 'ping' });

    const shown = await waitFor(async () => {
      const d = await detail(endpoint.id, res.body.id);
      return d.body.status === 'succeeded' && d.body;
    });
    expect(shown).toMatchObject({ eventType: 'ping', attemptCount: 1, nextAttemptAt: null, deliveredAt: expect.any(String) });
    expect(JSON.parse(shown.body)).toEqual(got.json);
    const [attempt] = shown.attempts;
    expect(attempt).toMatchObject({ statusCode: 200, success: true, response: { body: '{"ok":true}', truncated: false, headers: { 'x-receiver': 'yes' } } });
    expect(attempt.request.headers).toMatchObject({ 'content-type': 'application/json', 'tessera-event-type': 'ping', 'tessera-signature': got.headers['tessera-signature'] });
    // The signature is shown (it proves only this body); the secret never is.
    expect(JSON.stringify(shown)).not.toContain(endpoint.secret);
  });

  it("keeps the first 4 KiB of a failed answer, marked truncated, with the next retry time", async () => {
    const endpoint = await createEndpoint(['license.created']);
    receiver.answer({ status: 503, body: 'x'.repeat(10_000) });
    await createLicense(ctx, tenant, (await createProduct(ctx, tenant)).id);
    const [row] = await waitFor(async () => {
      const r = await rows(endpoint.id);
      return r.length > 0 ? r : undefined;
    });
    const shown = await waitFor(async () => {
      const d = await detail(endpoint.id, row!.id);
      return d.body.attemptCount >= 1 && d.body;
    });
    expect(shown.status).toBe('pending');
    expect(Date.parse(shown.nextAttemptAt)).toBeGreaterThan(Date.parse(shown.attempts[0].attemptedAt));
    expect(shown.attempts[0]).toMatchObject({ statusCode: 503, success: false, response: { truncated: true } });
    expect(shown.attempts[0].response.body).toBe('x'.repeat(4096));
    // The list stays light: attempts there carry no request or answer.
    const list = await call(ctx, { method: 'GET', url: `/api/v1/webhooks/${endpoint.id}/deliveries`, headers: tenant.auth });
    expect(list.body.data[0].attempts[0]).not.toHaveProperty('response');
    await call(ctx, { method: 'DELETE', url: `/api/v1/webhooks/${endpoint.id}`, headers: tenant.auth });
  });

  it('refuses a test event to a disabled endpoint (400, nothing queued) and an unknown delivery (404)', async () => {
    const endpoint = await createEndpoint(['*']);
    await call(ctx, { method: 'PATCH', url: `/api/v1/webhooks/${endpoint.id}`, headers: tenant.auth, json: { enabled: false } });
    const res = await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/test`, headers: tenant.auth });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(await rows(endpoint.id)).toEqual([]);
    expect((await detail(endpoint.id, 'wd_unknown')).status).toBe(404);
    expect((await call(ctx, { method: 'POST', url: '/api/v1/webhooks/we_unknown/test', headers: tenant.auth })).status).toBe(404);
  });

  it("never tests or shows another account's endpoint or delivery (404)", async () => {
    const endpoint = await createEndpoint(['*']);
    const sent = await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/test`, headers: tenant.auth });
    const intruder = await createTenant(ctx);
    const before = (await rows(endpoint.id)).length;
    expect((await call(ctx, { method: 'POST', url: `/api/v1/webhooks/${endpoint.id}/test`, headers: intruder.auth })).status).toBe(404);
    expect((await detail(endpoint.id, sent.body.id, intruder)).status).toBe(404);
    // The intruder's own endpoint id with the victim's delivery id: still not found.
    const own = await createEndpoint(['*'], intruder);
    expect((await detail(own.id, sent.body.id, intruder)).status).toBe(404);
    expect((await rows(endpoint.id)).length).toBe(before);
  });
});

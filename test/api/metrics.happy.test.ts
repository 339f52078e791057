import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';
import { waitFor } from '../support/wait.ts';
import { useWebhookReceiver } from '../support/webhook-receiver.ts';

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

forEachStore('GET /metrics', (kind) => {
  const ctx = useTestApp(kind);
  const scrape = async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  it('counts requests by route pattern (not the raw URL) and status, with durations', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    await call(ctx, { method: 'GET', url: `/api/v1/products/${p.id}`, headers: t.auth });
    await call(ctx, { method: 'GET', url: '/api/v1/products/prod_none', headers: t.auth });
    const text = await scrape();
    const series = (status: number) => `tessera_http_request_duration_seconds_count{method="GET",route="/api/v1/products/:productId",status="${status}"}`;
    expect(sample(text, series(200))).toBe(1);
    expect(sample(text, series(404))).toBe(1);
    expect(text).toContain(`tessera_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/api/v1/products/:productId",status="200"}`);
    expect(text).not.toContain(p.id);
  });

  it('counts activation outcomes by API, the outbox backlog and the store pool, and process metrics', async () => {
    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const l = await createLicense(ctx, t, p.id, { maxDevices: 1 });
    // A job no consumer of this process works stays pending: the backlog.
    await ctx.services.units.run((unit) => ctx.services.outbox.enqueue(unit, 'metrics-test', {}));
    const activate = (deviceIdentifier: string) =>
      call(ctx, { method: 'POST', url: '/api/v1/public/licenses/activate', json: { licenseKey: l.key, productId: p.id, deviceIdentifier, deviceName: 'n' } });
    await activate('one');
    await activate('two');
    const text = await scrape();
    expect(sample(text, 'tessera_activations_total{api="public",outcome="activated"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'tessera_activations_total{api="public",outcome="max_devices_reached"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'tessera_outbox_jobs{kind="metrics-test",status="pending"}')).toBe(1);
    if (kind === 'postgres') expect(sample(text, 'tessera_store_pool{state="total"}')).toBeGreaterThanOrEqual(1);
    else {
      expect(sample(text, 'tessera_store_pool{state="queued_units"}')).toBe(0);
      expect(sample(text, 'tessera_sqlite_statements_cached')).toBeGreaterThan(10);
      expect(sample(text, 'tessera_sqlite_statements_evicted_total')).toBe(0);
    }
    if (kind === 'postgres') expect(text).not.toContain('tessera_sqlite_statements');
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'tessera_rate_limit_fallback_total')).toBe(0);
  });
});

forEachStore('GET /metrics: the webhook family', (kind) => {
  const ctx = useTestApp(kind, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, app: { mail: { worker: { pollMs: 20 } } } });
  const suite = useWebhookReceiver();

  it('counts delivery attempts by outcome, and shows the backlog of deliveries and the age of the oldest', async () => {
    const scrape = async () => (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body;
    const before = await scrape();
    expect(sample(before, 'tessera_webhook_backlog')).toBe(0);
    expect(sample(before, 'tessera_webhook_oldest_pending_seconds')).toBe(0);
    expect(sample(before, 'tessera_webhook_attempts_total{outcome="succeeded"}')).toBe(0);
    expect(before).toContain('# TYPE tessera_webhook_attempts_total counter');

    const t = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    expect((await call(ctx, { method: 'POST', url: '/api/v1/webhooks', headers: t.auth, json: { url: suite.receiver.url, events: ['license.created'] } })).status).toBe(200);
    suite.receiver.answer(200, 500); // the first delivery succeeds, the second fails and waits for its retry (10 s)
    await createLicense(ctx, t, p.id);
    await createLicense(ctx, t, p.id);
    await waitFor(() => suite.receiver.received.length === 2, { message: 'two attempts' });
    await waitFor(async () => sample(await scrape(), 'tessera_webhook_attempts_total{outcome="retrying"}') === 1, { message: 'the failed attempt counted' });
    await new Promise((r) => setTimeout(r, 1100));
    const text = await scrape();
    expect(sample(text, 'tessera_webhook_attempts_total{outcome="succeeded"}')).toBe(1);
    expect(sample(text, 'tessera_webhook_attempts_total{outcome="failed"}')).toBe(0);
    expect(sample(text, 'tessera_webhook_backlog')).toBe(1);
    expect(sample(text, 'tessera_webhook_oldest_pending_seconds')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'tessera_webhook_oldest_pending_seconds')).toBeLessThan(30);
  });
});

import { describe, expect, it } from 'vitest';
import type { AppError } from '../../src/core/errors.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { SecretBox } from '../../src/core/secret-box.ts';
import { DELETE_ENDPOINT_JOB, DELETE_ENDPOINT_GIVE_UP_MS, deleteEndpointConsumer } from '../../src/modules/payments/endpoint-jobs.ts';
import { createServices } from '../../src/services.ts';
import type { Store } from '../../src/storage/index.ts';
import { createTenant } from '../support/app.ts';
import { connectStripe, usePaymentsApp } from '../support/payments.ts';
import { forEachStore } from '../support/stores.ts';

/** The delete-endpoint jobs in the outbox, oldest first. */
async function jobs(store: Store) {
  return store.read.all(store.db.selectFrom('outbox').selectAll().where('kind', '=', DELETE_ENDPOINT_JOB).orderBy('created_at'));
}

forEachStore('payments: a replaced endpoint is deleted through the outbox', (kind) => {
  const p = usePaymentsApp(kind);
  const { double } = p;
  const exists = (url: string) => [...double.endpoints.values()].some((e) => e.url === url);

  it('Stripe down at reconnect: the job fails, is retried, and deletes the old endpoint once Stripe is back', async () => {
    const t = await createTenant(p.ctx);
    const first = await connectStripe(p, t);
    double.failRoute('DELETE /v1/webhook_endpoints', 503);
    let second;
    try {
      second = await connectStripe(p, t);
      // The reconnect is answered; the deletion failed at Stripe and waits for its retry.
      await expect.poll(async () => (await jobs(p.ctx.store)).find((j) => j.account_id === t.accountId)?.last_error ?? null).not.toBeNull();
      const [job] = (await jobs(p.ctx.store)).filter((j) => j.account_id === t.accountId);
      expect(job).toMatchObject({ status: 'pending', attempts: 1 });
      expect(job!.next_attempt_at).toBeGreaterThan(Date.now());
      // The old key travels sealed, as in the connection's row.
      expect(job!.payload).not.toContain(first.key);
      expect(JSON.parse(job!.payload)).toMatchObject({ provider: 'stripe', connectionId: first.connectionId, apiKeySealed: expect.stringMatching(/^v1\./) });
      expect(exists(first.webhookUrl)).toBe(true);
    } finally {
      double.heal();
    }
    // Its retry comes due (as it would after the back-off): the endpoint goes, with the old key.
    const { store } = p.ctx;
    await store.write((tx) => tx.run(store.db.updateTable('outbox').set({ next_attempt_at: 0 }).where('kind', '=', DELETE_ENDPOINT_JOB).where('account_id', '=', t.accountId)));
    await expect.poll(() => exists(first.webhookUrl), { timeout: 5000 }).toBe(false);
    expect(double.calls('DELETE', '/v1/webhook_endpoints/').at(-1)!.key).toBe(first.key);
    await expect.poll(async () => (await jobs(p.ctx.store)).find((j) => j.account_id === t.accountId)!.status).toBe('done');
    expect(exists(second.webhookUrl)).toBe(true);
  });

  it('a process that stops right after the reconnect commits leaves the job: another process deletes the endpoint', async () => {
    const t = await createTenant(p.ctx);
    // A second process on the same store, without an outbox worker: its deletion can only be the job.
    const crashed = createServices(p.ctx.store, p.ctx.config.secretKey, undefined, p.ctx.config);
    const principal = cliPrincipal(t.accountId);
    const firstKey = double.account();
    const first = await crashed.payments.connect(principal, 'stripe', firstKey);
    await crashed.payments.connect(principal, 'stripe', double.account());
    const queued = (await jobs(p.ctx.store)).filter((j) => j.account_id === t.accountId);
    expect(queued.map((j) => JSON.parse(j.payload).endpointId)).toEqual([first.webhookEndpointId]);
    // The app's worker (the other process) finds the row and deletes the endpoint.
    await expect.poll(() => double.endpoints.has(first.webhookEndpointId), { timeout: 5000 }).toBe(false);
    await expect.poll(async () => (await jobs(p.ctx.store)).find((j) => j.account_id === t.accountId)!.status).toBe('done');
  });

  it('an endpoint Stripe no longer has, or a key Stripe refuses by now, is done; other failures are retried', async () => {
    const t = await createTenant(p.ctx);
    const principal = cliPrincipal(t.accountId);
    const key = double.account();
    const c = await p.ctx.services.payments.connect(principal, 'stripe', key);
    const payload = { provider: 'stripe', connectionId: c.id, endpointId: c.webhookEndpointId, apiKeySealed: c.apiKeySealed };
    await p.ctx.services.payments.deleteEndpoint(payload);
    expect(double.endpoints.has(c.webhookEndpointId)).toBe(false);
    await p.ctx.services.payments.deleteEndpoint(payload); // 404 at Stripe: done
    // A key Stripe no longer knows (revoked): nothing can be deleted with it, so the job is done.
    const revoked = new SecretBox(p.ctx.config.secretKey, 'payment-providers').seal('rk_test_revokedkey123456', c.id);
    await p.ctx.services.payments.deleteEndpoint({ ...payload, apiKeySealed: revoked });
    // Stripe failing: the job throws, so the worker retries it.
    const other = await p.ctx.services.payments.connect(principal, 'stripe', key);
    double.failRoute('DELETE /v1/webhook_endpoints', 500);
    try {
      const failed = await p.ctx.services.payments.deleteEndpoint({ ...payload, connectionId: other.id, endpointId: other.webhookEndpointId, apiKeySealed: other.apiKeySealed }).catch((e: unknown) => e);
      expect((failed as AppError).code).toBe('provider_unavailable');
    } finally {
      double.heal();
    }
    expect(double.endpoints.has(other.webhookEndpointId)).toBe(true);
  });
});

describe('the delete-endpoint job retry policy', () => {
  const consumer = deleteEndpointConsumer(async () => {});
  const job = (createdAt: number, attempts: number) => ({ id: 'j', kind: DELETE_ENDPOINT_JOB, payload: {}, attempts, createdAt, claimedBy: 'w' });
  it('backs off from about 30 s to hourly and keeps retrying for 30 days, then gives up', () => {
    const now = 1_000_000_000_000;
    expect(consumer.retryAt!(job(now, 1), now)! - now).toBeGreaterThanOrEqual(24_000);
    expect(consumer.retryAt!(job(now, 1), now)! - now).toBeLessThanOrEqual(36_000);
    expect(consumer.retryAt!(job(now - 10 * 86_400_000, 50), now)! - now).toBeLessThanOrEqual(72 * 60_000);
    expect(consumer.retryAt!(job(now - DELETE_ENDPOINT_GIVE_UP_MS, 500), now)).toBeNull();
  });
});

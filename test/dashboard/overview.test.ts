import { describe, expect, it } from 'vitest';
import { OverviewService, TALLY_SLICE, TALLY_WAIT_MS } from '../../src/modules/overview/service.ts';
import type { OverviewRepository } from '../../src/modules/overview/types.ts';
import { call, createLicense, createProduct, createTenant, type Tenant, type TestContext, useTestApp } from '../support/app.ts';
import { signIn, textOf } from '../support/dashboard.ts';
import { activateDevice } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

async function purchase(ctx: TestContext, t: Tenant, o: { amount: number; currency: string; status?: 'fulfilled' | 'unmapped' | 'refunded'; daysAgo?: number }) {
  const at = Date.now() - (o.daysAgo ?? 1) * DAY;
  const id = `pur_${Math.random().toString(36).slice(2)}`;
  await ctx.store.write((tx) =>
    tx.run(
      ctx.store.db.insertInto('purchases').values({
        id, account_id: t.accountId, provider: 'stripe', session_id: id, payment_id: null, email: 'b@example.com', email_normalized: 'b@example.com',
        amount_total: o.amount, currency: o.currency, status: o.status ?? 'fulfilled', invoice_id: null, created_at: at, updated_at: at,
      }),
    ),
  );
}

forEachStore('dashboard overview and audit log', (kind) => {
  const ctx = useTestApp(kind);

  it('shows licenses by status, active devices, activity over 7 and 30 days, revenue per currency and the latest changes', async () => {
    const t = await createTenant(ctx);
    const other = await createTenant(ctx);
    const p = await createProduct(ctx, t);
    const a = await createLicense(ctx, t, p.id);
    const revoked = await createLicense(ctx, t, p.id);
    await createLicense(ctx, t, p.id, { type: 'timed', expiresAt: '2020-01-01' });
    await createLicense(ctx, other, (await createProduct(ctx, other)).id);
    await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': revoked.key }, json: { revoked: true } });
    for (const d of ['d1', 'd2']) expect((await activateDevice(ctx, t.auth, a.key, p.id, d)).status).toBe(200);
    await purchase(ctx, t, { amount: 1999, currency: 'usd' });
    await purchase(ctx, t, { amount: 1000, currency: 'usd' });
    await purchase(ctx, t, { amount: 500, currency: 'eur' });
    await purchase(ctx, t, { amount: 700, currency: 'eur', status: 'refunded' });
    await purchase(ctx, t, { amount: 9999, currency: 'usd', daysAgo: 40 });

    const browser = await signIn(ctx, t.email);
    const res = await browser.request('GET', '/dashboard');
    expect(res.status).toBe(200);
    const text = textOf(res.body);
    for (const fact of ['Licenses 3', 'Active 1', 'Expired 1', 'Revoked 1', 'Active devices 2', 'Activations, 7 days 2', 'Activations, 30 days 2', 'Validations, 7 days 0']) expect(text).toContain(fact);
    expect(text).toContain('Revenue in USD, 30 days $29.99 · 2 purchases');
    expect(text).toContain('Revenue in EUR, 30 days €5.00 · 1 purchase');
    expect(text).toContain('Refunded or disputed, 30 days 1');
    expect(text).toContain('Latest changes');
    expect(res.body).toContain(`href="/dashboard/licenses/${revoked.key}"`);
    expect(res.body).toContain('href="/dashboard/licenses?status=expired"');
  });

  describe('audit log page', () => {
    it('lists the whole account newest first, filters by change and key, and never shows another account', async () => {
      const t = await createTenant(ctx);
      const other = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      const first = await createLicense(ctx, t, p.id);
      const second = await createLicense(ctx, t, p.id);
      const theirs = await createLicense(ctx, other, (await createProduct(ctx, other)).id);
      await call(ctx, { method: 'PATCH', url: '/api/v1/licenses', headers: { ...t.auth, 'license-key': second.key }, json: { revoked: true } });
      const browser = await signIn(ctx, t.email);
      const all = await browser.request('GET', '/dashboard/audit');
      expect(all.status).toBe(200);
      expect(all.body).toContain('<h1>Audit log</h1>');
      expect(all.body.indexOf(second.key)).toBeLessThan(all.body.indexOf(first.key));
      expect(all.body).not.toContain(theirs.key);
      const revokedOnly = await browser.request('GET', '/dashboard/audit?type=license.revoked');
      expect(revokedOnly.body).toContain(second.key);
      expect(revokedOnly.body).not.toContain(first.key);
      const byKey = await browser.request('GET', `/dashboard/audit?key=${first.key.toLowerCase()}`);
      expect(byKey.body).toContain(first.key);
      expect(byKey.body).not.toContain(second.key);
      expect(textOf((await browser.request('GET', `/dashboard/audit?key=${theirs.key}`)).body)).toContain('No change matches these filters.');
    });

    it('pages older entries, and answers a made-up cursor with a 400 page that says what to do', async () => {
      const t = await createTenant(ctx);
      const p = await createProduct(ctx, t);
      const keys: string[] = [];
      for (let i = 0; i < 52; i++) keys.push((await createLicense(ctx, t, p.id)).key);
      const browser = await signIn(ctx, t.email);
      const first = await browser.request('GET', '/dashboard/audit');
      const older = /href="(\/dashboard\/audit\?cursor=[^"]+)"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
      const second = await browser.request('GET', older);
      expect(second.body).toContain(keys[0]!);
      expect(first.body).not.toContain(keys[0]!);
      const bad = await browser.request('GET', '/dashboard/audit?cursor=bogus');
      expect(bad.status).toBe(400);
      expect(textOf(bad.body)).toContain('Start again from the newest entries');
    });
  });
});

describe('overview tally', () => {
  /** An account of one full slice and 5 more licenses, each slice taking `ms`. */
  const slow = (ms: number): OverviewRepository => ({
    tallySlice: async (_account, after) => {
      await new Promise((r) => setTimeout(r, ms));
      return after === '' ? { licenses: TALLY_SLICE, revoked: 0, expired: 0, activeDevices: 0, lastKey: 'K' } : { licenses: 5, revoked: 1, expired: 1, activeDevices: 2, lastKey: null };
    },
    revenueSince: async () => ({ paid: [], refundedOrDisputed: 0 }),
  });
  const service = (repo: OverviewRepository, clock: () => number) => new OverviewService(repo, {} as never, {} as never, clock);

  it('counts a small account on every view', async () => {
    let licenses = 5;
    const repo: OverviewRepository = { ...slow(0), tallySlice: async () => ({ licenses, revoked: 0, expired: 0, activeDevices: 0, lastKey: null }) };
    const s = service(repo, () => 7);
    expect(await s.tally('small')).toMatchObject({ licenses: 5, kept: false });
    licenses = 6;
    expect(await s.tally('small')).toMatchObject({ licenses: 6 });
  });

  it("keeps a large account's count a minute, then shows it while counting again behind it", async () => {
    let now = 1_000_000;
    let slices = 0;
    const repo = slow(2);
    const counted = { ...repo, tallySlice: (...args: Parameters<OverviewRepository['tallySlice']>) => (slices++, repo.tallySlice(...args)) };
    const s = service(counted, () => now);
    expect(await s.tally('acc')).toMatchObject({ licenses: TALLY_SLICE + 5, active: TALLY_SLICE + 3, activeDevices: 2, countedAt: 1_000_000, kept: true });
    expect(await s.tally('acc')).toMatchObject({ countedAt: 1_000_000 });
    expect(slices).toBe(2);
    now += 61_000;
    expect(await s.tally('acc')).toMatchObject({ countedAt: 1_000_000 }); // the last one, while counting again
    await new Promise((r) => setTimeout(r, 50));
    expect(await s.tally('acc')).toMatchObject({ countedAt: 1_061_000 });
    expect(slices).toBe(4);
  });

  it('does not hold a page for a long first count: nothing yet, then the count', async () => {
    const s = service(slow(TALLY_WAIT_MS * 4), () => 5);
    const started = Date.now();
    expect(await s.tally('big')).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(TALLY_WAIT_MS * 3);
    await new Promise((r) => setTimeout(r, TALLY_WAIT_MS * 10));
    expect(await s.tally('big')).toMatchObject({ licenses: TALLY_SLICE + 5 });
  });
});

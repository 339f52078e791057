import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { cliPrincipal } from '../../src/core/principal.ts';
import { ActivityService } from '../../src/modules/activity/service.ts';
import type { ActivityCount, ActivityRepository } from '../../src/modules/activity/service.ts';
import { createServices } from '../../src/services.ts';
import { createTestDatabase, forEachStore } from '../support/stores.ts';

const DAY = 86_400_000;

forEachStore('activity counts', (kind) => {
  it('are written when the server shuts down, and read back by the next one', async () => {
    const database = await createTestDatabase(kind);
    const config = loadConfig({ RATE_LIMIT: 'off', ...database.env });
    const store = await database.open();
    const services = createServices(store, config.secretKey, undefined, config);
    const app = await buildApp({ config, services, logger: false });
    await app.ready();
    const account = await services.accounts.create({ email: 'flush@example.com', password: 'long enough password' });
    const principal = cliPrincipal(account.id);
    const product = await services.products.create(principal, { name: 'P' });
    const license = await services.licenses.create(principal, { productId: product.id, type: 'perpetual', maxDevices: 2 });
    const body = { licenseKey: license.key, productId: product.id, deviceIdentifier: 'd' };
    const post = (url: string, payload: object) => app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
    expect((await post('/api/v1/public/licenses/activate', { ...body, deviceName: 'D' })).statusCode).toBe(200);
    expect((await post('/api/v1/public/licenses/validate', body)).statusCode).toBe(200);
    // The server API's activations and valid validations count too; failures do not.
    const { secret } = await services.apiKeys.create(principal, 'backend');
    const server = (url: string, payload: object) =>
      app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'license-key': license.key }, payload: JSON.stringify(payload) });
    expect((await server('/api/v1/licenses/activate', { productId: product.id, device: { identifier: 'e', name: 'E' } })).statusCode).toBe(200);
    expect((await server('/api/v1/licenses/activate', { productId: product.id, device: { identifier: 'f', name: 'F' } })).statusCode).toBe(400);
    expect((await server('/api/v1/licenses/validate', { productId: product.id, deviceIdentifier: 'e' })).json().isValid).toBe(true);
    expect((await server('/api/v1/licenses/validate', { productId: product.id, deviceIdentifier: 'nope' })).json().isValid).toBe(false);
    expect((await post('/api/v1/public/licenses/validate', { ...body, deviceIdentifier: 'nope' })).json().isValid).toBe(false);
    await app.close();
    const rows = await store.read.all(store.db.selectFrom('activity_daily').selectAll());
    expect(rows.map((r) => [r.product_id, Number(r.activations), Number(r.validations)])).toEqual([[product.id, 2, 2]]);
    const next = createServices(store, config.secretKey, undefined, config);
    const days = await next.activity.lastDays(principal);
    expect(days).toHaveLength(30);
    expect(days.at(-1)).toMatchObject({ activations: 2, validations: 2 });
    await store.close();
    await database.drop();
  });
});

describe('activity service', () => {
  it('keeps counts across a day boundary apart, and keeps them for the next flush when a flush fails', async () => {
    let now = 100 * DAY + DAY - 1;
    const written: ActivityCount[][] = [];
    let fail = true;
    const repo: ActivityRepository = {
      add: async (_unit, counts) => {
        if (fail) throw new Error('store down');
        written.push(counts.map((c) => ({ ...c })));
      },
      list: async () => [],
    };
    const activity = new ActivityService(repo, { run: (work) => work({ emit: async () => {} }) }, () => now);
    activity.validated('u', 'p');
    now += 2; // the next day
    activity.validated('u', 'p');
    activity.activated('u', 'p');
    await expect(activity.flush()).rejects.toThrow('store down');
    fail = false;
    await activity.flush();
    expect(written[0]!.sort((a, b) => a.day - b.day)).toEqual([
      { productId: 'p', accountId: 'u', day: 100, activations: 0, validations: 1 },
      { productId: 'p', accountId: 'u', day: 101, activations: 1, validations: 1 },
    ]);
    await activity.flush();
    expect(written).toHaveLength(1);
  });
});

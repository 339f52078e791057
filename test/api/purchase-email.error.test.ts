import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport, outboxFor } from '../support/mail.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('purchase e-mail errors', (kind) => {
  const ctx = useTestApp(kind, { app: { mail: { transport: new CapturingTransport() } } });

  it('refuses sendEmail without an e-mail address and stores no license', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    for (const json of [
      { productId: product.id, type: 'perpetual', maxDevices: 1, sendEmail: true },
      { productId: product.id, type: 'perpetual', maxDevices: 1, sendEmail: true, email: null },
    ]) {
      const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'email' }] });
    }
    const bad = await call(ctx, { method: 'POST', url: '/api/v1/licenses', headers: t.auth, json: { productId: product.id, type: 'perpetual', maxDevices: 1, email: 'a@example.com', sendEmail: 'yes' } });
    expect(bad.status).toBe(400);
    const page = await call(ctx, { method: 'GET', url: `/api/v1/products/${product.id}/licenses`, headers: t.auth });
    expect(page.body.data).toEqual([]);
  });

  it('answers send-email errors: no e-mail 400, unknown or foreign license 404, no key 401', async () => {
    const t = await createTenant(ctx);
    const other = await createTenant(ctx);
    const product = await createProduct(ctx, t);
    const noEmail = await createLicense(ctx, t, product.id);
    const url = '/api/v1/licenses/send-email';
    const res = await call(ctx, { method: 'POST', url, headers: { ...t.auth, 'license-key': noEmail.key } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    const withEmail = await createLicense(ctx, t, product.id, { email: 'foreign@example.com' });
    expect((await call(ctx, { method: 'POST', url, headers: { ...other.auth, 'license-key': withEmail.key } })).status).toBe(404);
    expect((await call(ctx, { method: 'POST', url, headers: { ...t.auth, 'license-key': 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE' } })).status).toBe(404);
    expect((await call(ctx, { method: 'POST', url, headers: { 'license-key': withEmail.key } })).status).toBe(401);
    expect((await call(ctx, { method: 'POST', url, headers: t.auth })).status).toBe(400);
    expect(await outboxFor(ctx.store, 'foreign@example.com')).toEqual([]);
  });
});

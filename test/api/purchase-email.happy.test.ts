import { expect, it } from 'vitest';
import { call, createLicense, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { CapturingTransport, outboxFor } from '../support/mail.ts';
import { PNG } from '../support/images.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('purchase e-mail', (kind) => {
  const transport = new CapturingTransport();
  const ctx = useTestApp(kind, { app: { mail: { transport } } });

  it('queues the purchase e-mail with the license when sendEmail is true', async () => {
    const t = await createTenant(ctx);
    const product = await createProduct(ctx, t, {
      name: 'Photo Studio',
      description: 'Edit photos fast.',
      purchaseNote: 'Install from the download page.',
      actionButtonText: 'Download now',
      actionButtonUrl: 'https://vendor.test/download?key={key}',
    });
    const license = await createLicense(ctx, t, product.id, { email: 'buyer@example.com', sendEmail: true, type: 'timed', expiresAt: '2030-06-01', maxDevices: 2 });
    const mail = await transport.waitFor('buyer@example.com', 'purchase');
    expect(mail.subject).toBe('Your license key for Photo Studio');
    expect(mail.replyTo).toBe(t.email);
    for (const part of [mail.text, mail.html]) {
      expect(part).toContain(license.key);
      expect(part).toContain('Photo Studio');
      expect(part).toContain('Edit photos fast.');
      expect(part).toContain('Install from the download page.');
      expect(part).toContain('Download now');
      expect(part).toContain(`https://vendor.test/download?key=${encodeURIComponent(license.key)}`);
      expect(part).toContain('1 Jun 2030');
      expect(part).toContain('Up to 2 devices');
      // No support e-mail on the product: the owner's account address.
      expect(part).toContain(t.email);
      expect(part).toContain(`${ctx.config.baseUrl}/portal/request?email=buyer%40example.com`);
    }
    // No image: the product has none.
    expect(mail.html).not.toContain('/image"');
  });

  it('uses the product support e-mail and shows the image for plus accounts only', async () => {
    const plus = await createTenant(ctx, 'plus');
    const product = await createProduct(ctx, plus, { name: 'Pictured', supportEmail: 'help@pictured.test' });
    const put = await ctx.app.inject({ method: 'PUT', url: `/api/v1/products/${product.id}/image`, headers: { ...plus.auth, 'content-type': 'image/png' }, payload: PNG });
    expect(put.statusCode).toBe(200);
    await createLicense(ctx, plus, product.id, { email: 'pictured@example.com', sendEmail: true });
    const mail = await transport.waitFor('pictured@example.com', 'purchase');
    expect(mail.html).toContain(`src="${ctx.config.baseUrl}/api/v1/public/products/${product.id}/image"`);
    expect(mail.html).toContain('help@pictured.test');
    expect(mail.replyTo).toBe('help@pictured.test');
    expect(mail.html).not.toContain(plus.email);

    // Downgraded to free: the image no longer goes out.
    await ctx.services.accounts.setPlan(plus.email, 'free');
    const license = await createLicense(ctx, plus, product.id, { email: 'later@example.com' });
    expect((await call(ctx, { method: 'POST', url: '/api/v1/licenses/send-email', headers: { ...plus.auth, 'license-key': license.key } })).status).toBe(200);
    expect((await transport.waitFor('later@example.com', 'purchase')).html).not.toContain('/image"');
  });

  it('creates no e-mail unless asked', async () => {
    const t = await createTenant(ctx);
    await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'quiet@example.com' });
    await createLicense(ctx, t, (await createProduct(ctx, t)).id, { email: 'quiet@example.com', sendEmail: false });
    expect(await outboxFor(ctx.store, 'quiet@example.com')).toEqual([]);
  });

  it('sends the e-mail again on POST /licenses/send-email', async () => {
    const t = await createTenant(ctx);
    const license = await createLicense(ctx, t, (await createProduct(ctx, t, { name: 'Resent' })).id, { email: 'again@example.com' });
    const res = await call(ctx, { method: 'POST', url: '/api/v1/licenses/send-email', headers: { ...t.auth, 'license-key': license.key.toLowerCase() } });
    expect(res.status).toBe(200);
    expect(res.raw.body).toBe('');
    expect((await transport.waitFor('again@example.com', 'purchase')).text).toContain(license.key);
  });
});

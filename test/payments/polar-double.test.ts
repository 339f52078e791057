import { Polar } from '@polar-sh/sdk';
import { validateEvent } from '@polar-sh/sdk/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PolarDouble, polarObjects, polarSignedEvent } from '../support/polar-double.ts';

/** The double answers what @polar-sh/sdk itself accepts: every call the adapter makes, parsed by the package's own schemas. */
describe('Polar double against @polar-sh/sdk', () => {
  const double = new PolarDouble();
  beforeAll(() => double.start());
  afterAll(() => double.stop());

  it('answers every call the adapter makes in the shapes the package parses', async () => {
    const { token, organizationId } = double.organization();
    const polar = new Polar({ accessToken: token, serverURL: double.url });
    expect((await polar.organizations.get({ id: organizationId })).id).toBe(organizationId);
    const endpoint = await polar.webhooks.createWebhookEndpoint({ url: 'https://example.com/hook', format: 'raw', events: ['order.paid'] });
    expect(endpoint.secret).toMatch(/^polar_whs_/);
    expect((await polar.webhooks.updateWebhookEndpoint({ id: endpoint.id, webhookEndpointUpdate: { events: ['order.paid', 'order.refunded'] } })).events).toEqual(['order.paid', 'order.refunded']);
    const productId = double.addProduct(token);
    expect((await polar.products.get({ id: productId })).id).toBe(productId);
    const order = double.addOrder(token, { productId, seats: 3, metadata: { tessera_license_key: 'K' } });
    const got = await polar.orders.get({ id: order.id });
    expect(got.productId).toBe(productId);
    expect(got.seats).toBe(3);
    expect((await polar.orders.invoice({ id: order.id })).url).toMatch(/^https:/);
    const subProduct = double.addProduct(token, { recurring: true });
    const sub = double.addSubscription(token, { productId: subProduct, seats: 2, cancelAtPeriodEnd: true });
    const order2 = double.addOrder(token, { productId: subProduct, subscriptionId: sub.id, billingReason: 'subscription_create' });
    expect((await polar.orders.get({ id: order2.id })).subscription?.id).toBe(sub.id);
    const s = await polar.subscriptions.get({ id: sub.id });
    expect(s.cancelAtPeriodEnd).toBe(true);
    expect(s.currentPeriodEnd.getTime()).toBe(sub.currentPeriodEnd);
    const checkout = await polar.checkouts.create({ products: [productId], customerEmail: 'a@example.com', metadata: { tessera_license_key: 'K' }, successUrl: 'https://example.com/ok' });
    expect(checkout.url).toMatch(/^https:\/\/sandbox\.polar\.sh\/checkout\//);
    expect(checkout.metadata).toEqual({ tessera_license_key: 'K' });
    const session = await polar.customerSessions.create({ customerId: sub.customerId, returnUrl: 'https://example.com/portal' });
    expect(session.customerPortalUrl).toMatch(/^https:\/\/sandbox\.polar\.sh\//);
    await polar.webhooks.deleteWebhookEndpoint({ id: endpoint.id });
    expect(double.endpoints.size).toBe(0);
  });

  it('refuses an unknown token with 401 and a missing object with 404, as Polar does', async () => {
    const polar = new Polar({ accessToken: 'polar_oat_nope', serverURL: double.url });
    await expect(polar.organizations.get({ id: 'x' })).rejects.toMatchObject({ statusCode: 401 });
    const { token } = double.organization();
    await expect(new Polar({ accessToken: token, serverURL: double.url }).products.get({ id: 'nope' })).rejects.toMatchObject({ statusCode: 404 });
  });

  it("signs deliveries so that the package's validateEvent accepts them (older polar_whs_ secrets)", () => {
    const { token } = double.organization();
    const productId = double.addProduct(token);
    const { organizationId } = double.organization();
    const order = double.addOrder(token, { productId });
    const secret = 'polar_whs_abc123';
    const signed = polarSignedEvent(secret, 'order.paid', polarObjects.order(order, organizationId));
    expect(validateEvent(signed.payload, signed.headers, secret)).toMatchObject({ type: 'order.paid', data: { id: order.id, productId } });
    expect(() => validateEvent(signed.payload, signed.headers, 'polar_whs_other')).toThrow();
  });
});

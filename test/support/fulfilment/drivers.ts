import { call, createProduct, createTenant, type TestContext } from '../app.ts';
import type { Delivery, Doubles, ProviderDriver, Shop } from './driver.ts';
import { lemonSqueezyDriver } from './lemonsqueezy.ts';
import { polarDriver } from './polar.ts';
import { stripeDriver } from './stripe.ts';

/** Every provider's driver, over one app's doubles. */
export const drivers = (d: Doubles): ProviderDriver[] => [stripeDriver(d), lemonSqueezyDriver(d), polarDriver(d)];

/** POSTs a signed notification to the connection's route of the provider. */
export function deliver(ctx: TestContext, provider: string, connectionId: string, delivery: Delivery) {
  return call(ctx, { method: 'POST', url: `/api/v1/payments/${provider}/webhook/${connectionId}`, headers: { 'content-type': 'application/json', ...delivery.headers }, payload: delivery.payload });
}

/** Delivers each in turn; any answer but 200 throws. */
export async function deliverAll(ctx: TestContext, driver: ProviderDriver, shop: Shop, deliveries: Delivery[]): Promise<void> {
  for (const delivery of deliveries) {
    const res = await deliver(ctx, driver.name, shop.connectionId, delivery);
    if (res.status !== 200) throw new Error(`${driver.name} delivery: ${res.status} ${JSON.stringify(res.body)}`);
  }
}

export async function mapPrice(ctx: TestContext, driver: ProviderDriver, shop: Shop, productId: string, body: Record<string, unknown>) {
  const res = await call(ctx, { method: 'POST', url: `/api/v1/products/${productId}/prices`, headers: shop.t.auth, json: { provider: driver.name, maxDevices: 1, licenseType: 'perpetual', ...body } });
  if (res.status !== 200) throw new Error(`map ${driver.name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export const SUBSCRIPTION = { billing: 'subscription', licenseType: 'timed' } as const;

/** A tenant connected to the provider, with a product and a mapped price (`mapping` its options; none: one-time perpetual). */
export async function openShop(ctx: TestContext, driver: ProviderDriver, mapping: Record<string, unknown> = {}) {
  const shop = await driver.connect(await createTenant(ctx));
  const product = await createProduct(ctx, shop.t, { name: 'Photo Studio', defaultEntitlements: ['basic'] });
  const priceId = driver.price(shop, mapping.billing === 'subscription' ? 'subscription' : 'one_time');
  await mapPrice(ctx, driver, shop, product.id, { priceId, ...mapping });
  return { shop, productId: product.id, priceId };
}

export async function purchasesOf(ctx: TestContext, shop: Shop) {
  return (await call(ctx, { method: 'GET', url: '/api/v1/payments/purchases', headers: shop.t.auth })).body.data as Record<string, unknown>[];
}

export async function licenseView(ctx: TestContext, shop: Shop, key: string) {
  return (await call(ctx, { method: 'GET', url: '/api/v1/licenses', headers: { ...shop.t.auth, 'license-key': key } })).body;
}

let buyers = 0;
export const buyer = (): string => `buyer${++buyers}-${Date.now()}@example.com`;

import { expect, it } from 'vitest';
import { call, createProduct, createTenant, useTestApp } from '../support/app.ts';
import { getTokenConfig } from '../support/license-tokens.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('license tokens: concurrent settings', (kind) => {
  const ctx = useTestApp(kind);

  it("two first changes of a product's token settings at once both hold: neither undoes the other", async () => {
    const t = await createTenant(ctx);
    for (let round = 0; round < 8; round++) {
      const product = await createProduct(ctx, t);
      const put = (json: Record<string, unknown>) => call(ctx, { method: 'PUT', url: `/api/v1/products/${product.id}/license-token`, headers: t.auth, json });
      const answers = await Promise.all([put({ validitySeconds: 7200 }), put({ exposePublicKey: false })]);
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      const config = (await getTokenConfig(ctx, t, product.id)).body;
      expect(config, `round ${round}`).toMatchObject({ validitySeconds: 7200, exposePublicKey: false });
      const row = await ctx.store.read.first(ctx.store.db.selectFrom('license_token_configs').select('version').where('product_id', '=', product.id));
      expect(Number(row!.version)).toBe(2);
    }
  });
});

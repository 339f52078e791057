// The vendor's side, done once: a product with license tokens on, and a license to sell.
// Writes app-config.json: what a real app would have compiled in (server, product, public key).
import { writeFileSync } from 'node:fs';
import { Tessera } from '@tessera/node';

const baseUrl = process.env.TESSERA_BASE_URL ?? 'http://127.0.0.1:3000';
const tessera = new Tessera({ baseUrl }); // API key from TESSERA_API_KEY

const product = await tessera.products.create({ name: 'Desktop CLI example' });
const tokens = await tessera.licenseTokens.update(product.id, { enabled: true, validitySeconds: 7 * 86_400 });
const license = await tessera.licenses.create({ productId: product.id, type: 'perpetual', maxDevices: 2 });

const config = { baseUrl, productId: product.id, publicKey: tokens.publicKeyJwk };
writeFileSync(new URL('app-config.json', import.meta.url), `${JSON.stringify(config, null, 2)}\n`);
console.log(`Product ${product.id} issues tokens signed by key ${tokens.keyId}.`);
console.log(`License key to sell: ${license.key}`);

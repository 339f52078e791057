// A desktop app's licensing, end to end: activate on first run, then start offline from the
// stored token, refreshing it online in time. Usage:
//   node app.mjs activate <LICENSE-KEY>   first run: activate this device
//   node app.mjs                          every start: check the license (works offline)
//   node app.mjs deactivate               free this device's slot
// Options: --clock +5d pretends the clock is 5 days ahead (to watch refresh and expiry happen).
// TESSERA_BASE_URL overrides the server (point it at a dead port to play "offline").
import { randomUUID, webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LicenseClient } from '@tessera/client';
import { FileTokenStorage } from './file-token-storage.mjs';

const args = process.argv.slice(2);
const clockAt = args.indexOf('--clock');
const offsetDays = clockAt >= 0 ? Number.parseFloat(args.splice(clockAt, 2)[1]) : 0;
const [command = 'start', licenseKey] = args;

const config = JSON.parse(readFileSync(new URL('app-config.json', import.meta.url), 'utf8'));
const home = process.env.DESKTOP_CLI_HOME ?? new URL('.state', import.meta.url).pathname;

/** A random id made once per installation: the spec's "random UUID stored on the device". */
function deviceIdentifier() {
  const file = join(home, 'device-id');
  if (!existsSync(file)) {
    mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileSync(file, randomUUID(), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

const client = new LicenseClient({
  baseUrl: process.env.TESSERA_BASE_URL ?? config.baseUrl,
  productId: config.productId,
  publicKey: config.publicKey,
  storage: new FileTokenStorage(join(home, 'license-token')),
  timeoutMs: 3000,
  crypto: webcrypto, // Node 18 has no global WebCrypto (19+ does; this is the same object there)
  now: () => Date.now() + offsetDays * 86_400_000,
});
const device = deviceIdentifier();
const date = (seconds) => new Date(seconds * 1000).toISOString();

if (command === 'activate') {
  if (!licenseKey) throw new Error('usage: node app.mjs activate <LICENSE-KEY>');
  const result = await client.activate({ licenseKey, deviceIdentifier: device, deviceName: `${process.platform} desktop` });
  if (!result.ok) {
    console.log(`Activation failed: ${result.error.message} (${result.error.code})`);
    process.exit(1);
  }
  console.log(`Activated ${result.value.license.key} on this device; token stored.`);
} else if (command === 'deactivate') {
  const claims = (await client.validateAndRefreshToken(device)).claims;
  const result = claims ? await client.removeDevice({ licenseKey: claims.license.key, deviceIdentifier: device }) : { ok: false };
  console.log(result.ok ? 'This device is deactivated.' : 'Nothing to deactivate (or the server is unreachable).');
} else {
  const state = await client.validateAndRefreshToken(device);
  if (state.valid) {
    const how = state.refreshed ? 'token refreshed online' : state.offline ? 'server unreachable: running offline' : 'verified offline';
    console.log(`Licensed (${state.status}${state.limited ? ', limited' : ''}): ${how}; token valid until ${date(state.claims.exp)}.`);
    if (state.tokenExpired) console.log('The token has expired; it will be renewed the next time the server is reachable.');
  } else if (state.needsActivation) {
    console.log(`Not activated (${state.code}). Run: node app.mjs activate <LICENSE-KEY>`);
    process.exit(1);
  } else {
    console.log(`Not licensed: ${state.message} (${state.code})`);
    process.exit(1);
  }
}

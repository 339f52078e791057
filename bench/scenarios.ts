import type autocannon from 'autocannon';
import { deviceOf, type Fixture } from './seed.ts';
import { paymentScenarios } from './payment-scenarios.ts';
import { tokenScenarios } from './token-scenarios.ts';
import { modelScenarios } from './model-scenarios.ts';

export type StoreKind = 'sqlite' | 'postgres';

/** What a scenario gets: the seeded tenant and the running server under test. */
export interface ScenarioContext {
  store: StoreKind;
  baseUrl: string;
  fixture: Fixture;
}

/**
 * One load scenario, run against every store. `request` builds the autocannon request (use
 * `setupRequest` to vary it per request); `prepare` may change the seeded data first (over the
 * server API at `ctx.baseUrl`, with `ctx.fixture.apiKey`); `check` looks at one sample answer
 * before the load, so a scenario that silently answers errors fails loudly instead.
 */
export interface Scenario {
  name: string;
  prepare?(ctx: ScenarioContext): Promise<void>;
  request(ctx: ScenarioContext): autocannon.Request;
  check(status: number, body: unknown): string | undefined;
  /**
   * Once per bench run, before any server starts: something the scenario needs beside the server
   * (a payment provider's test double); its `env` goes to every server child.
   */
  start?(): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
  /**
   * Also measure at this offered rate (requests/s, open loop): a latency target stated at a rate
   * ("p99 under 100 ms at 300/s") is read there, not at saturation, where latency is only queueing.
   */
  pacedRate?: number;
  /** Every request must be new (a device, a purchase): a replayed one would measure something else. */
  distinct?: boolean;
  /**
   * Reads validation rows, which PostgreSQL's processes keep in memory: each server validates
   * every license once first, as clients that validate at start and hourly keep them cached.
   */
  cached?: boolean;
}

const json = { 'content-type': 'application/json' };
const pick = (n: number): number => Math.floor(Math.random() * n);

/** A sample answer must be 200 with `isValid: true`. */
function expectValid(status: number, body: unknown): string | undefined {
  if (status !== 200) return `HTTP ${status}: ${JSON.stringify(body)}`;
  return (body as { isValid?: unknown }).isValid === true ? undefined : `not valid: ${JSON.stringify(body)}`;
}

let deviceSerial = 0;
const runTag = Date.now().toString(36);

export const scenarios: Scenario[] = [
  {
    // A random license with its active device: the answer is valid.
    name: 'public validate',
    cached: true,
    request: ({ fixture: { keys, productId } }) => ({
      method: 'POST',
      path: '/api/v1/public/licenses/validate',
      headers: json,
      setupRequest: (req) => {
        const i = pick(keys.length);
        return { ...req, body: `{"licenseKey":"${keys[i]}","deviceIdentifier":"${deviceOf(i)}","productId":"${productId}"}` };
      },
    }),
    check: expectValid,
  },
  {
    // The server API: Bearer API key, License-Key header, the device to check in the body.
    name: 'server validate',
    request: ({ fixture: { keys, productId, apiKey } }) => ({
      method: 'POST',
      path: '/api/v1/licenses/validate',
      setupRequest: (req) => {
        const i = pick(keys.length);
        return {
          ...req,
          headers: { ...json, authorization: `Bearer ${apiKey}`, 'license-key': keys[i]! },
          body: `{"deviceIdentifier":"${deviceOf(i)}","productId":"${productId}"}`,
        };
      },
    }),
    check: expectValid,
  },
  {
    // A new device on a random license with room: every request writes (durably) and answers 200.
    name: 'public activate',
    distinct: true,
    request: ({ fixture: { keys, productId } }) => ({
      method: 'POST',
      path: '/api/v1/public/licenses/activate',
      headers: json,
      setupRequest: (req) => {
        const device = `new-${runTag}-${deviceSerial++}`;
        return { ...req, body: `{"licenseKey":"${keys[pick(keys.length)]}","deviceIdentifier":"${device}","deviceName":"Bench","productId":"${productId}"}` };
      },
    }),
    check: expectValid,
  },
  ...tokenScenarios,
  ...paymentScenarios,
  ...modelScenarios,
];

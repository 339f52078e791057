/**
 * Who acts. Authentication yields a principal; every service call receives it, every query it
 * makes is scoped to `accountId`, and every event it causes names `actor`.
 */
export type Actor =
  | { type: 'api_key'; apiKeyId: string }
  | { type: 'dashboard_user'; userId: string }
  | { type: 'cli' }
  | { type: 'public' }
  | { type: 'portal'; email: string }
  | { type: 'provider'; provider: string }
  /** A floating license's lease that lapsed without a heartbeat: the service released its device. */
  | { type: 'lease' };

/** An actor acting for one account (server API, dashboard, CLI, a payment provider's event). */
export interface Principal {
  readonly accountId: string;
  readonly actor: Actor;
}

/** The public API: anyone holding a license key. */
export const PUBLIC_ACTOR: Actor = Object.freeze({ type: 'public' });

/** Who releases a device whose lease lapsed. */
export const LEASE_ACTOR: Actor = Object.freeze({ type: 'lease' });

export const apiKeyPrincipal = (accountId: string, apiKeyId: string): Principal => ({ accountId, actor: { type: 'api_key', apiKeyId } });

/** The operator's command line acts for the account it names. */
export const cliPrincipal = (accountId: string): Principal => ({ accountId, actor: { type: 'cli' } });

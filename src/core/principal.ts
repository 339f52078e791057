import { type Access, type Scope, UNRESTRICTED } from './access.ts';

/**
 * Who acts. Authentication yields a principal; every service call receives it, every query it
 * makes is scoped to `accountId`, every event it causes names `actor`, and `access` says how far
 * it reaches (core/access.ts decides, once per request, before the handler runs).
 */
export type Actor =
  | { type: 'api_key'; apiKeyId: string }
  /**
   * A member signed in to the dashboard: `userId` is the member's id (the wire's name,
   * docs/decisions/account-id.md), `email` their sign-in address when they acted (entries from
   * before members have none), so the audit log names them after they are gone.
   */
  | { type: 'dashboard_user'; userId: string; email?: string }
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
  readonly access: Access;
}

/** The public API: anyone holding a license key. */
export const PUBLIC_ACTOR: Actor = Object.freeze({ type: 'public' });

/** Who releases a device whose lease lapsed. */
export const LEASE_ACTOR: Actor = Object.freeze({ type: 'lease' });

export const apiKeyPrincipal = (accountId: string, apiKeyId: string, scope: Scope): Principal => ({
  accountId,
  actor: { type: 'api_key', apiKeyId },
  access: { type: 'scope', scope },
});

/** The operator's command line acts for the account it names, with no limit (whoever runs it runs the server). */
export const cliPrincipal = (accountId: string): Principal => ({ accountId, actor: { type: 'cli' }, access: UNRESTRICTED });

/** A payment provider's event acts for the account whose connection received it. */
export const providerPrincipal = (accountId: string, provider: string): Principal => ({ accountId, actor: { type: 'provider', provider }, access: UNRESTRICTED });

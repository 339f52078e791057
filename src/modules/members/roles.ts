import type { Role } from '../../core/access.ts';

/** Roles as people read them, with what each may do (decisions.md, "Operators: teams and security"; core/access.ts decides). */
export const ROLE_NAMES: Record<Role, string> = { owner: 'Owner', admin: 'Admin', support: 'Support', viewer: 'Viewer' };

export const ROLE_HINTS: Record<Role, string> = {
  owner: 'Everything, members and the account’s security included.',
  admin: 'Everything but members and the account’s security.',
  support: 'Licenses, devices, portal links and purchases; products, token keys and webhooks read only; no payments, API keys or settings.',
  viewer: 'Reads everything an admin sees; changes nothing but their own sign-in.',
};

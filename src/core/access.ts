import { AppError } from './errors.ts';

/**
 * Who may do what: the one place where an API key's scope and a member's role become a yes or a
 * no (decisions.md, "Operators: teams and security"). Every server-API route and every dashboard
 * route names the area it touches; one hook per surface asks `requireAccess` with the request's
 * principal before the handler runs. A route that names no area is refused to everyone.
 */

/** What a route touches. */
export const AREAS = [
  'products', // products and their images
  'licenses', // licenses, devices, validation, their audit log
  'tokens', // license-token settings and key pairs
  'webhooks',
  'payments', // the provider connection and price mappings
  'purchases', // purchases and their invoices
  'portal', // private portal links
  'overview', // the dashboard's overview and activity charts (dashboard only)
  'apiKeys', // dashboard only
  'settings', // the account's branding (dashboard only)
  'members', // members, invitations and the account's security policy (dashboard only)
  'profile', // a signed-in member's own password, e-mail and two-factor sign-in (dashboard only)
] as const;
export type Area = (typeof AREAS)[number];

/** GET and HEAD read; every other method writes. */
export type Action = 'read' | 'write';
export const actionOf = (method: string): Action => (method === 'GET' || method === 'HEAD' ? 'read' : 'write');

export const SCOPES = ['full', 'read', 'licenses'] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ['owner', 'admin', 'support', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** How far a principal reaches: an API key's scope, a member's role, or everything (the command line, a payment provider's event). */
export type Access = { type: 'scope'; scope: Scope } | { type: 'role'; role: Role } | { type: 'unrestricted' };

export const UNRESTRICTED: Access = Object.freeze({ type: 'unrestricted' });

type Grant = 'write' | 'read' | 'none';
const DASHBOARD_ONLY: ReadonlySet<Area> = new Set(['overview', 'apiKeys', 'settings', 'members', 'profile']);

const ROLE_GRANTS: Record<Role, (area: Area) => Grant> = {
  owner: () => 'write',
  // Everything but members (seen, not changed) and the account's security policy.
  admin: (area) => (area === 'members' ? 'read' : 'write'),
  // Customers' licenses, devices, portal links and purchases; products, token keys and webhooks
  // read only; payments, API keys, branding and members hidden.
  support: (area) => {
    if (area === 'licenses' || area === 'portal' || area === 'purchases' || area === 'profile') return 'write';
    if (area === 'products' || area === 'tokens' || area === 'webhooks' || area === 'overview') return 'read';
    return 'none';
  },
  // Reads everything an admin sees; changes only their own sign-in.
  viewer: (area) => (area === 'profile' ? 'write' : area === 'members' ? 'none' : 'read'),
};

const SCOPE_GRANTS: Record<Scope, (area: Area) => Grant> = {
  full: (area) => (DASHBOARD_ONLY.has(area) ? 'none' : 'write'),
  read: (area) => (DASHBOARD_ONLY.has(area) ? 'none' : 'read'),
  licenses: (area) => (area === 'licenses' ? 'write' : 'none'),
};

function grantOf(access: Access, area: Area): Grant {
  switch (access.type) {
    case 'unrestricted':
      return 'write';
    case 'scope':
      return SCOPE_GRANTS[access.scope](area);
    case 'role':
      return ROLE_GRANTS[access.role](area);
  }
}

/** Whether `access` may take `action` in `area` (an unknown area: never). */
export function permits(access: Access, area: Area | undefined, action: Action): boolean {
  if (area === undefined || !AREAS.includes(area)) return false;
  const grant = grantOf(access, area);
  return grant === 'write' || (grant === 'read' && action === 'read');
}

/** Throws 403 `insufficient_scope` unless `access` may take `action` in `area`. */
export function requireAccess(access: Access, area: Area | undefined, action: Action): void {
  if (permits(access, area, action)) return;
  throw new AppError(
    'insufficient_scope',
    access.type === 'scope' ? `This API key's scope (${access.scope}) does not allow this request.` : 'Your role does not allow this.',
  );
}

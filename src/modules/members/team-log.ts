import { timeOrderedId } from '../../core/ids.ts';
import type { Actor, Principal } from '../../core/principal.ts';
import type { Unit } from '../../core/unit-of-work.ts';

/**
 * The team's own log: every change to who may sign in and how (invitations, joins, role changes,
 * removals, the two-factor requirement), with the member who made it, written in the change's unit.
 * Kept apart from the license audit log, which the server API lists (`GET /api/v1/events`): members
 * are a dashboard-only area, out of an API key's reach; owners and admins read this on the members page.
 */
export type TeamEventType = 'member.invited' | 'invitation.revoked' | 'member.joined' | 'member.role_changed' | 'member.removed' | 'two_factor.requirement_changed';

export interface TeamEvent {
  id: string;
  accountId: string;
  type: TeamEventType;
  actor: Actor;
  /** Whom it concerns and what changed: `{email, role}`, `{email, role: {from, to}}`, `{required: {from, to}}`. */
  changes: Record<string, unknown>;
  createdAt: number;
}

export interface TeamLogRepository {
  insert(unit: Unit, event: TeamEvent): Promise<void>;
  /** The account's newest `limit` entries, newest first. */
  list(accountId: string, limit: number): Promise<TeamEvent[]>;
  /** Drops every account's entries older than `before`; how many. */
  purge(before: number): Promise<number>;
}

export const TEAM_LOG_SHOWN = 50;

export class TeamLog {
  constructor(
    private readonly repo: TeamLogRepository,
    private readonly clock: () => number = Date.now,
    /** AUDIT_RETENTION_DAYS in ms: the team's log is kept as long as the license audit log. */
    private readonly keepMs = 365 * 86_400_000,
  ) {}

  record(unit: Unit, principal: Pick<Principal, 'accountId' | 'actor'>, type: TeamEventType, changes: Record<string, unknown>): Promise<void> {
    const at = this.clock();
    return this.repo.insert(unit, { id: timeOrderedId(at), accountId: principal.accountId, type, actor: principal.actor, changes, createdAt: at });
  }

  list(principal: Principal, limit = TEAM_LOG_SHOWN): Promise<TeamEvent[]> {
    return this.repo.list(principal.accountId, limit);
  }

  /** Drops entries older than the retention; run by the outbox worker's housekeeping. */
  purge(now: number): Promise<number> {
    return this.repo.purge(now - this.keepMs);
  }
}

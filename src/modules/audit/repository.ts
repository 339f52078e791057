import { sql } from 'kysely';
import type { Actor } from '../../core/principal.ts';
import type { Unit } from '../../core/unit-of-work.ts';
import type { Store } from '../../storage/index.ts';
import { Prepared } from '../../storage/prepared.ts';
import { executorOf } from '../../storage/unit-of-work.ts';
import { timeOrderedFloor } from '../../core/ids.ts';
import { activationEntry, type AuditEntry, type AuditRepository, type AuditScope, type AuditType } from './service.ts';

const PURGE_CHUNK = 5000;

type InsertParams = { id: string; account: string; key: string; type: string; actor: string; changes: string | null; at: number };

export class SqlAuditRepository implements AuditRepository {
  /** Written on every license change, the activation hot path included: built once. */
  private readonly insertStatement: Prepared<InsertParams, never>;

  constructor(private readonly store: Store) {
    this.insertStatement = new Prepared<InsertParams, never>((p) =>
      store.db.insertInto('audit_events').values({
        id: p('id'),
        account_id: p('account'),
        license_key: p('key'),
        type: p('type'),
        actor: p('actor'),
        changes: p('changes'),
        created_at: p('at'),
      }),
    );
  }

  async insert(unit: Unit, e: AuditEntry): Promise<void> {
    await executorOf(unit).run(
      this.insertStatement.bind({
        id: e.id,
        account: e.accountId,
        key: e.licenseKey,
        type: e.type,
        actor: JSON.stringify(e.actor),
        changes: e.changes === null ? null : JSON.stringify(e.changes),
        at: e.createdAt,
      }),
    );
  }

  /**
   * A page of entries newest first: one license's (a walk of `audit_events_license_idx`, the account
   * checked on each row) or the account's (`audit_events_account_idx`, or `_account_type_idx` with a type).
   */
  listQuery(accountId: string, scope: AuditScope, { limit, before }: { limit: number; before?: string }) {
    return this.store.db
      .selectFrom('audit_events')
      .selectAll()
      // With a key, the account is checked on each row, not looked up by: `account_id || ''` keeps
      // both planners off the account's index (a license's few entries are fewer than an account's many).
      .$if(scope.licenseKey === undefined, (q) => q.where('account_id', '=', accountId))
      .$if(scope.licenseKey !== undefined, (q) => q.where(sql<string>`account_id || ''`, '=', accountId).where('license_key', '=', scope.licenseKey!))
      .$if(scope.type !== undefined, (q) => q.where('type', '=', scope.type!))
      .$if(before !== undefined, (q) => q.where('id', '<', before!))
      .orderBy('id', 'desc')
      .limit(limit);
  }

  /**
   * A page of the activations active devices hold, newest first: one license's (its devices' rows,
   * sorted: a license's devices are one key range) or the account's (`devices_activation_idx`
   * walked from the newest, each device's license checked for the account by its primary key).
   */
  heldQuery(accountId: string, scope: AuditScope, { limit, before, since }: { limit: number; before?: string; since: number }) {
    const columns = ['d.license_key', 'd.identifier', 'd.name', 'd.activation_date', 'd.activation_id', 'd.activated_by', 'd.activated_name'] as const;
    if (scope.licenseKey !== undefined) {
      // The license's own rows, sorted (ordered by key first so no planner walks every activation instead).
      return this.store.db
        .selectFrom('devices as d')
        .innerJoin('licenses as l', 'l.key', 'd.license_key')
        .select(columns)
        .where('d.license_key', '=', scope.licenseKey)
        .where('l.account_id', '=', accountId)
        .where('d.activation_id', '>=', timeOrderedFloor(since))
        .$if(before !== undefined, (q) => q.where('d.activation_id', '<', before!))
        .orderBy('d.license_key', 'desc')
        .orderBy('d.activation_id', 'desc')
        .limit(limit);
    }
    // The newest activations first, each device's license probed for the account: a CROSS JOIN,
    // which SQLite never reorders (it would otherwise read every license of the account, then sort).
    return this.store.db
      .selectFrom('devices as d')
      .crossJoin('licenses as l')
      .select(columns)
      .whereRef('l.key', '=', 'd.license_key')
      .where('l.account_id', '=', accountId)
      .where('d.activation_id', '>=', timeOrderedFloor(since))
      .$if(before !== undefined, (q) => q.where('d.activation_id', '<', before!))
      .orderBy('d.activation_id', 'desc')
      .limit(limit);
  }

  async list(accountId: string, scope: AuditScope, options: { limit: number; before?: string; since: number }): Promise<AuditEntry[]> {
    // Held entries first: one whose device is removed between the two reads (PostgreSQL reads each
    // statement's own snapshot) is then seen in both, never in neither, and kept once below.
    const holdsAny = scope.type === undefined || scope.type === 'device.activated';
    const held = !holdsAny
      ? []
      : (await this.store.read.all(this.heldQuery(accountId, scope, options))).map((r) =>
          activationEntry(accountId, r.license_key, {
            identifier: r.identifier,
            name: r.name,
            activationDate: r.activation_date,
            activation: { id: r.activation_id!, actor: JSON.parse(r.activated_by!) as Actor, name: r.activated_name ?? r.name },
          }),
        );
    const logged = (await this.store.read.all(this.listQuery(accountId, scope, options))).map(
      (r): AuditEntry => ({
        id: r.id,
        accountId: r.account_id,
        licenseKey: r.license_key,
        type: r.type as AuditType,
        actor: JSON.parse(r.actor) as Actor,
        changes: r.changes === null ? null : (JSON.parse(r.changes) as Record<string, unknown>),
        createdAt: Number(r.created_at),
      }),
    );
    if (held.length === 0) return logged;
    // Two pages newest first, merged; an entry both held and logged (moved meanwhile) counts once.
    const loggedIds = new Set(logged.map((e) => e.id));
    return [...logged, ...held.filter((e) => !loggedIds.has(e.id))].sort((a, b) => (a.id < b.id ? 1 : -1)).slice(0, options.limit);
  }

  async purge(before: number): Promise<number> {
    let total = 0;
    for (;;) {
      // Ids sort by time: the oldest entries are the start of the primary key.
      const old = this.store.db.selectFrom('audit_events').select('id').where('id', '<', timeOrderedFloor(before)).limit(PURGE_CHUNK);
      const n = await this.store.write((tx) => tx.run(this.store.db.deleteFrom('audit_events').where('id', 'in', old)));
      total += n;
      if (n < PURGE_CHUNK) return total;
    }
  }
}

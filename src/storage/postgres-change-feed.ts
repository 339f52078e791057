import pg from 'pg';
import type { ChangeFeed, ChangeListener } from './change-feed.ts';

/** The channel the triggers of migration 014 notify: a license key, or `*` for everything. */
export const LICENSE_CHANNEL = 'tessera_licenses';
const EVERYTHING = '*';
const RECONNECT_MS = [100, 500, 1000, 5000];

/**
 * PostgreSQL's change feed: one connection per process that LISTENs on the channel the triggers on
 * `licenses`, `devices` and `products.fallback_enabled` notify (migration 014). PostgreSQL delivers
 * a transaction's notifications when it commits, to every listening connection, in commit order.
 * While the connection is down the feed is not live, and every (re)connection resets the listeners.
 */
export class PostgresChangeFeed implements ChangeFeed {
  private readonly listeners: ChangeListener[] = [];
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private failures = 0;
  live = false;
  /** Fences asked for since the last one was sent, and whether one is in flight. */
  private waiting: (() => void)[] = [];
  private fencing = false;

  constructor(private readonly connectionString: string) {}

  subscribe(listener: ChangeListener): void {
    this.listeners.push(listener);
    if (this.listeners.length === 1) this.connect();
  }

  private connect(): void {
    if (this.closed || this.connecting) return;
    this.connecting = this.open().finally(() => (this.connecting = undefined));
  }

  private async open(): Promise<void> {
    // Named, so an operator can tell it apart in pg_stat_activity.
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'tessera change feed' });
    client.on('notification', (message) => {
      if (message.channel !== LICENSE_CHANNEL) return;
      const key = message.payload ?? EVERYTHING;
      for (const listener of this.listeners) {
        if (key === EVERYTHING) listener.reset();
        else listener.changed(key);
      }
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${LICENSE_CHANNEL}`);
    } catch {
      await client.end().catch(() => {});
      this.retry();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.failures = 0;
    // From here on every change is heard; anything before may have been missed.
    for (const listener of this.listeners) listener.reset();
    this.live = true;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.live = false;
    for (const listener of this.listeners) listener.reset();
    void client.end().catch(() => {});
    this.releaseFences();
    this.retry();
  }

  private retry(): void {
    if (this.closed) return;
    const delay = RECONNECT_MS[Math.min(this.failures++, RECONNECT_MS.length - 1)]!;
    setTimeout(() => this.connect(), delay).unref();
  }

  fence(): Promise<void> {
    if (!this.live) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.fencing) this.sendFence();
    });
  }

  /**
   * A round trip on the listening connection: PostgreSQL sends it every notification committed
   * before the query, ahead of the query's answer, and pg dispatches them in order. One fence in
   * flight serves every caller that asked before it was sent; later callers wait for the next.
   */
  private sendFence(): void {
    const client = this.client;
    const served = this.waiting;
    this.waiting = [];
    if (!client || served.length === 0) {
      for (const done of served) done();
      return;
    }
    this.fencing = true;
    const finish = () => {
      this.fencing = false;
      for (const done of served) done();
      if (this.waiting.length > 0) this.sendFence();
    };
    // A failed fence means a lost connection: `lost` has reset the listeners, so no stale answer follows.
    client.query('SELECT 1').then(finish, finish);
  }

  /** Callers waiting on a connection that went away: the reset made their fence unnecessary. */
  private releaseFences(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const done of waiting) done();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    this.releaseFences();
    await client?.end().catch(() => {});
  }
}

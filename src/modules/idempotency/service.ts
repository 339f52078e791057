import type { SecretBox } from '../../core/secret-box.ts';
import type { Unit, UnitGuest } from '../../core/unit-of-work.ts';
import type { Executor } from '../../storage/store.ts';

/** A stored first answer, replayed byte for byte. */
export interface StoredResponse {
  status: number;
  contentType: string | null;
  body: string;
}

/** What the store holds for a key: a null response means its request has not finished (or lost its answer in a crash). */
export interface KeyRow {
  accountId: string;
  key: string;
  hash: string;
  response: StoredResponse | null;
  lockedUntil: number;
  expiresAt: number;
}

export type Claim =
  | { outcome: 'claimed'; hold: Hold }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'in_use' }
  | { outcome: 'reused' };

/** Where the keys are kept: their rows, and how a request's claim on one is made exclusive. */
export type IdempotencyRepository = LocalKeys | SharedKeys;

interface KeyRows {
  /** The key's row as committed (a row of an expired key may be returned: its expiry decides). */
  find(accountId: string, key: string): Promise<KeyRow | undefined>;
  /** Writes the key's row whatever is there (its holder's right), inside a unit of work: the record of a change, or the answer. */
  putIn(unit: Unit, row: KeyRow): Promise<void>;
  /** The same in a unit of its own, answered once committed (not waiting for its sync to disk). */
  save(row: KeyRow): Promise<void>;
  purgeExpired(now: number, limit: number): Promise<number>;
}

/**
 * A store one server process owns (SQLite: the data directory's lock admits one): the requests in
 * flight are known in memory, so a claim needs no row until its change commits.
 */
export interface LocalKeys extends KeyRows {
  readonly shared: false;
  /** True when the key surely has no row, known without a read (most keyed requests); false: `find` tells. */
  isNew(accountId: string, key: string): boolean;
  /** Reads what `isNew` needs: before the server listens (else at the first use). */
  load(): Promise<void>;
}

/** A store several processes share (PostgreSQL): a claim is a row every process sees before the request runs. */
export interface SharedKeys extends KeyRows {
  readonly shared: true;
  /** Inserts the claim; true when this call's insert won (a concurrent one does nothing). */
  insert(tx: Executor, row: KeyRow): Promise<boolean>;
  /** Takes over an expired key or a claim whose holder died (lease run out); true when it won. */
  takeOver(tx: Executor, row: KeyRow, now: number): Promise<boolean>;
  /** The key's row inside `tx`. */
  findIn(tx: Executor, accountId: string, key: string): Promise<KeyRow | undefined>;
  /** Deletes the key unless it holds an answer. */
  release(tx: Executor, accountId: string, key: string): Promise<void>;
}

export const KEY_LIFETIME_MS = 24 * 60 * 60_000;
/** A claim still in flight this long, its change not recorded, is taken to be from a process that died; a retry may run. */
export const CLAIM_LEASE_MS = 5 * 60_000;
export const IDEMPOTENCY_PURGE_BATCH = 1000;

/**
 * The service's own writes (the claim row on PostgreSQL, a release): answered once committed, not
 * synced (Store.write's awaitSync: false). Other processes see them at once, which is what a claim
 * is for; a crash of the database that lost one also ended the request that held it.
 */
type Write = <T>(work: (tx: Executor) => Promise<T>) => Promise<T>;

/** How one key's answer body is kept in the store: as sent, or sealed (an answer holding a secret). */
interface AnswerCodec {
  toStored(body: string): string;
  fromStored(stored: string): string;
}

const AS_SENT: AnswerCodec = { toStored: (body) => body, fromStored: (stored) => stored };

/**
 * An answer that holds a secret shown once (a webhook signing secret) is kept encrypted, bound to
 * its account and key, as the secret itself is. Sealed values start with the box's version prefix,
 * which no JSON answer does: an answer stored as sent before this existed still replays.
 */
function sealedAnswers(box: SecretBox, context: string): AnswerCodec {
  return {
    toStored: (body) => box.seal(body, context),
    fromStored: (stored) => (stored.startsWith('v1.') ? box.open(stored, context) : stored),
  };
}

/**
 * Idempotency-Key: the first request with a key claims it, later ones with the same request
 * replay its answer, with another request are refused, and while it runs are told to wait. Keys
 * are per account and live 24 hours.
 *
 * The claim is exclusive across processes: on PostgreSQL a claim row inserted before the request
 * runs (the insert wins once); on SQLite, whose data directory admits one server process, a set of
 * the keys in flight in this process (no write), and the store's index of keys in memory tells a
 * new key without a read (modules/idempotency/sqlite-keys.ts). Either way the request's first unit of work
 * records the key with its change (`Hold` is that unit's guest), so once the change is committed a
 * retry never runs it again, even if the process dies before the answer is stored.
 */
export class IdempotencyService {
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly repo: IdempotencyRepository,
    private readonly write: Write,
    private readonly clock: () => number,
    /** Seals the stored answers of routes whose answer holds a secret. */
    private readonly answerBox: SecretBox,
  ) {}

  /**
   * `answerHoldsSecret`: the answer is stored encrypted (and opened to replay it). A new key on a
   * store this process owns is claimed at once, without a promise: most keyed requests.
   */
  claim(accountId: string, key: string, hash: string, answerHoldsSecret = false): Claim | Promise<Claim> {
    const now = this.clock();
    const row: KeyRow = { accountId, key, hash, response: null, lockedUntil: now + CLAIM_LEASE_MS, expiresAt: now + KEY_LIFETIME_MS };
    const codec = answerHoldsSecret ? sealedAnswers(this.answerBox, `${accountId}\n${key}`) : AS_SENT;
    const repo = this.repo;
    return repo.shared ? this.claimInStore(repo, row, now, codec) : this.claimInProcess(repo, row, now, codec);
  }

  private claimInStore(repo: SharedKeys, row: KeyRow, now: number, codec: AnswerCodec): Promise<Claim> {
    return this.write(async (tx): Promise<Claim> => {
      if ((await repo.insert(tx, row)) || (await repo.takeOver(tx, row, now))) return { outcome: 'claimed', hold: new Hold(this, row, codec, () => this.releaseRow(repo, row)) };
      // Released between our insert and this read (its request failed): a retry may claim it.
      return verdict(await repo.findIn(tx, row.accountId, row.key), row.hash, now, codec) ?? { outcome: 'in_use' };
    });
  }

  private claimInProcess(repo: LocalKeys, row: KeyRow, now: number, codec: AnswerCodec): Claim | Promise<Claim> {
    const id = `${row.accountId}\n${row.key}`;
    if (this.inFlight.has(id)) return { outcome: 'in_use' };
    this.inFlight.add(id);
    const claimed = (): Claim => ({ outcome: 'claimed', hold: new Hold(this, row, codec, undefined, () => this.inFlight.delete(id)) });
    if (repo.isNew(row.accountId, row.key)) return claimed();
    return repo.find(row.accountId, row.key).then(
      (existing) => {
        const claim = verdict(existing, row.hash, now, codec);
        if (claim === undefined) return claimed();
        this.inFlight.delete(id);
        return claim;
      },
      (error: unknown) => {
        this.inFlight.delete(id);
        throw error;
      },
    );
  }

  /** What the service needs in memory before it serves (the SQLite store's index of keys). */
  async prepare(): Promise<void> {
    if (!this.repo.shared) await this.repo.load();
  }

  /** @internal Hold's writes: in the request's unit, or on their own. */
  record(row: KeyRow, unit: Unit): Promise<void> {
    return this.repo.putIn(unit, row);
  }

  /** @internal */
  save(row: KeyRow): Promise<void> {
    return this.repo.save(row);
  }

  private releaseRow(repo: SharedKeys, row: KeyRow): Promise<void> {
    return this.write((tx) => repo.release(tx, row.accountId, row.key));
  }

  /** Deletes up to `limit` expired keys; returns how many (the outbox worker's hourly housekeeping calls it). */
  purgeExpired(limit = IDEMPOTENCY_PURGE_BATCH): Promise<number> {
    return this.repo.purgeExpired(this.clock(), limit);
  }
}

/** What an existing row means for a new request with `hash`; undefined: the request may run. */
function verdict(existing: KeyRow | undefined, hash: string, now: number, codec: AnswerCodec): Claim | undefined {
  if (!existing || existing.expiresAt <= now) return undefined;
  if (existing.hash !== hash) return { outcome: 'reused' };
  const { response } = existing;
  if (response) return { outcome: 'replay', response: { ...response, body: codec.fromStored(response.body) } };
  // In flight, or its change committed without an answer (lease = expiry): never run twice.
  return existing.lockedUntil <= now ? undefined : { outcome: 'in_use' };
}

/**
 * One request's claim on its key, from the claim to the stored answer. As the guest of the
 * request's first unit it records the key in it, leased until the key expires: the change and
 * the record commit together.
 */
export class Hold implements UnitGuest {
  private recorded = false;
  /** The route's answer from its unit's value (answerFrom). */
  private render: ((value: unknown) => StoredResponse) | undefined;
  /** The answer recorded with the change, once its unit committed. */
  private answered: StoredResponse | undefined;

  constructor(
    private readonly service: IdempotencyService,
    private readonly row: KeyRow,
    private readonly codec: AnswerCodec,
    /** Deletes the claim row put in the store before the request ran (PostgreSQL); none on SQLite. */
    private readonly releaseClaim: (() => Promise<void>) | undefined,
    private readonly done: () => void = () => {},
  ) {}

  /**
   * For a route whose answer is a view of its unit's value: the key is then recorded on leaving the
   * unit together with that answer, one write in the change's own unit, and `complete` has nothing
   * left to store when the answer sent is that one (any other answer is stored as without it).
   */
  answerFrom(render: (value: unknown) => StoredResponse): void {
    this.render = render;
  }

  enter(unit: Unit): Promise<void> | undefined {
    return this.render ? undefined : this.service.record(this.keptRow(null), unit);
  }

  async leave(unit: Unit, value: unknown): Promise<void> {
    if (!this.render) return;
    let response: StoredResponse | undefined;
    try {
      response = this.render(value);
    } catch {
      // Not renderable here (the route will fail or answer otherwise): the key alone, as in enter.
    }
    await this.service.record(this.keptRow(response ?? null), unit);
    this.answered = response;
  }

  settled(committed: boolean): void {
    this.recorded = committed;
    if (!committed) this.answered = undefined;
  }

  /** The key's row as this request leaves it: leased until the key expires, its answer (if any) as stored. */
  private keptRow(response: StoredResponse | null): KeyRow {
    return { ...this.row, response: response && { ...response, body: this.codec.toStored(response.body) }, lockedUntil: this.row.expiresAt };
  }

  /** The request's change committed with the key recorded: a retry must never run it again. */
  get changed(): boolean {
    return this.recorded;
  }

  /**
   * Stores the answer before it is sent (a retry gets exactly what the client got), committed but
   * not waiting for its sync: the change it answers is durable already, with its key recorded, so
   * at worst (a power loss within that sync) a retry gets 409 rather than running twice. Nothing to
   * store (undefined) when it is the answer recorded with the change.
   */
  complete(response: StoredResponse): Promise<void> | undefined {
    const answered = this.answered;
    if (answered && answered.status === response.status && answered.contentType === response.contentType && answered.body === response.body) {
      this.done();
      return undefined;
    }
    return this.after(() => this.service.save(this.keptRow(response)));
  }

  /**
   * Forgets the key after a failure on the server's side, so the client's retry runs; unless the
   * change committed: its record stays (a retry is answered 409 until the key expires, never run twice).
   */
  release(): Promise<void> | undefined {
    if (this.releaseClaim && !this.recorded) return this.after(this.releaseClaim);
    this.done();
    return undefined;
  }

  /** `work`, then the hold is done, whatever its outcome. */
  private after(work: () => Promise<void>): Promise<void> {
    try {
      return work().finally(this.done);
    } catch (error) {
      this.done();
      return Promise.reject(error);
    }
  }
}

import { createHash, hash } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { normalizeLicenseKey } from '../core/license-key.ts';
import { inviteToFirstUnit } from '../core/unit-of-work.ts';
import type { Claim, Hold, IdempotencyService } from '../modules/idempotency/service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's claim on its Idempotency-Key (set only while it holds it). */
    idempotencyHold: Hold | null;
  }
  interface FastifyContextConfig {
    /**
     * The route's answer carries a secret shown once (a webhook signing secret): a stored answer
     * is kept encrypted, like the secret itself (docs/decisions/operations.md, "Idempotency-Key").
     */
    answerHoldsSecret?: boolean;
  }
}

/** POST and PUT as the contract says, and PATCH: a retried update must not apply twice either. */
const METHODS = new Set(['POST', 'PUT', 'PATCH']);
const MAX_KEY_LENGTH = 255;

/**
 * A JSON value with every object's keys sorted: the same request in another key order (a client
 * that rebuilds its body for the retry) is the same request, not a reused key.
 */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const fields = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`);
  return `{${fields.join(',')}}`;
}

/**
 * What names the request: method, URL and the headers that select the object it acts on. The
 * contract's operations on one license name it in `License-Key`, so that header is part of the
 * request (normalized as the lookup normalizes it): the same key sent for another license is a reused
 * key, never a replay of the first license's answer.
 */
function requestHash(req: FastifyRequest): string {
  const licenseKey = req.headers['license-key'];
  const head = typeof licenseKey === 'string' ? `${req.method} ${req.url}\nlicense-key: ${normalizeLicenseKey(licenseKey)}\n` : `${req.method} ${req.url}\n`;
  const body = req.body;
  if (Buffer.isBuffer(body)) return createHash('sha256').update(head).update(body).digest('base64url');
  // One call for the usual JSON body: the one-shot digest skips the Hash object.
  return hash('sha256', body === undefined || body === null ? head : head + (typeof body === 'string' ? body : canonicalJson(body)), 'base64url');
}

function keyOf(req: FastifyRequest): string | undefined {
  const header = req.headers['idempotency-key'];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || header.length < 1 || header.length > MAX_KEY_LENGTH) {
    throw new AppError('invalid_request', 'The request is invalid.', [{ path: 'headers.idempotency-key', message: `must be 1 to ${MAX_KEY_LENGTH} characters` }]);
  }
  return header;
}

type Operation = { security?: Record<string, unknown>[]; parameters?: Record<string, unknown>[] };

/**
 * The OpenAPI document names the header on every operation that takes it (server-API POST, PUT and
 * PATCH: the ones behind the API key), so generated clients can send it. Documentation only: the
 * hooks below check the header.
 */
export function documentIdempotencyKey<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Record<string, unknown>[]) {
    for (const [method, value] of Object.entries(operations)) {
      const operation = value as Operation;
      if (!METHODS.has(method.toUpperCase()) || !operation.security?.some((s) => 'apiKey' in s)) continue;
      operation.parameters = [
        ...(operation.parameters ?? []),
        {
          in: 'header',
          name: 'Idempotency-Key',
          required: false,
          description: 'Retry safely: the same key with the same request within 24 hours replays the first answer (docs/api.md).',
          schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
        },
      ];
    }
  }
  return document;
}

/**
 * `Idempotency-Key` on the server API (register in its scope, after authentication). The claim
 * is taken after the body is validated, so a request refused before it runs (auth, rate limit,
 * validation) stores nothing, as Stripe does. The handler runs with its claim invited into the
 * first unit of work it opens (the key is recorded with the change: a retry never runs a committed
 * change again). The first answer is stored in the database (every process sees it) and replayed
 * with `Idempotent-Replayed: true`; a 5xx before the change committed releases the key so the
 * client's retry runs, while 4xx answers (and a 5xx after a commit) are stored and replayed like successes.
 */
export function registerIdempotency(app: FastifyInstance, idempotency: IdempotencyService): void {
  app.decorateRequest('idempotencyHold', null);
  app.addHook('onReady', () => idempotency.prepare());

  app.addHook('preHandler', (req, reply, done) => {
    if (!METHODS.has(req.method) || req.headers['idempotency-key'] === undefined) return done();
    let claim: Claim | Promise<Claim>;
    try {
      claim = idempotency.claim(req.principal.accountId, keyOf(req)!, requestHash(req), req.routeOptions.config.answerHoldsSecret === true);
    } catch (error) {
      return done(error as Error);
    }
    // A new key on SQLite is claimed at once (no read, no promise); others after a look at the store.
    if (claim instanceof Promise) claim.then((c) => proceed(req, reply, c, done), done);
    else proceed(req, reply, claim, done);
  });

  /** Runs the request with its hold, or replays the stored answer, or answers 409 / 422. */
  function proceed(req: FastifyRequest, reply: FastifyReply, claim: Claim, done: (error?: Error) => void): void {
    switch (claim.outcome) {
      case 'claimed':
        req.idempotencyHold = claim.hold;
        // The handler runs within done() when this is the route's last preHandler; a unit it opens
        // before its first await takes the hold in (otherwise the hold stores itself with the answer).
        return inviteToFirstUnit(claim.hold, done);
      case 'in_use':
        return done(new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry later.'));
      case 'reused':
        return done(new AppError('idempotency_key_reused', 'This Idempotency-Key was used with another request.'));
      case 'replay': {
        // The answer is sent: the chain stops here (no done(), as Fastify asks).
        const { status, contentType, body } = claim.response;
        void reply.code(status).header('idempotent-replayed', 'true');
        if (contentType) void reply.type(contentType);
        void reply.send(body);
      }
    }
  }

  app.addHook('onSend', (req, reply, payload, done) => {
    const hold = req.idempotencyHold;
    if (hold === null) return done(null, payload);
    req.idempotencyHold = null;
    const settled = settle(req.log, hold, reply, payload);
    if (settled) void settled.then(() => done(null, payload));
    else done(null, payload);
  });
}

/**
 * A route whose answer (200, JSON) is `view` of what its service call's unit of work returns:
 * with an Idempotency-Key, the answer is rendered inside that unit and recorded with the change,
 * one write instead of the change's record and then the answer in a unit of its own. That rendering
 * is then the answer sent (already serialized, so Fastify sends it as it is): what a retry replays is
 * byte for byte what the client got. Without a key the route answers the view as any route does.
 */
export async function answeredInUnit<V, R extends object>(req: FastifyRequest, reply: FastifyReply, view: (value: V) => R, call: () => Promise<V>): Promise<R> {
  const hold = req.idempotencyHold;
  if (!hold) return view(await call());
  let rendered: { from: unknown; body: string } | undefined;
  // Set before `call` opens its unit (synchronously), which takes the hold in.
  hold.answerFrom((value) => {
    rendered = { from: value, body: reply.serializeInput(view(value as V) as Record<string, unknown>, '200') as string };
    return { status: 200, contentType: JSON_TYPE, body: rendered.body };
  });
  const value = await call();
  // Not rendered in the unit (see Hold.leave), or the call answered another value than its unit's: the view of it.
  if (rendered?.from !== value) return view(value);
  void reply.type(JSON_TYPE);
  return rendered.body as unknown as R;
}

/** What Fastify sends a serialized JSON answer as. */
const JSON_TYPE = 'application/json; charset=utf-8';

/** Stores the answer (or frees the key); undefined when there was nothing to wait for (the answer was recorded with the change). */
function settle(log: FastifyBaseLogger, hold: Hold, reply: FastifyReply, payload: unknown): Promise<void> | undefined {
  const storable = typeof payload === 'string' || Buffer.isBuffer(payload) || payload === null || payload === undefined;
  // A 5xx whose change never committed frees the key for the retry; once the change committed,
  // its answer is stored like any other (a retry must never run it again), 5xx or not.
  const contentType = reply.getHeader('content-type');
  const work =
    (reply.statusCode >= 500 && !hold.changed) || !storable
      ? hold.release()
      : hold.complete({ status: reply.statusCode, contentType: typeof contentType === 'string' ? contentType : null, body: payload === null || payload === undefined ? '' : String(payload) });
  return work?.catch((error: unknown) => {
    // The answer goes out anyway; a retry then gets 409 (change recorded) or, after the lease, runs.
    log.error({ err: error }, 'could not store the idempotent answer');
  });
}

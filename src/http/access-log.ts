import { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { fstatSync, writeSync } from 'node:fs';
import pino, { type LoggerOptions } from 'pino';
import { toAppError } from './errors.ts';

/**
 * Logs that cost little on the hot path: one access line per request (Fastify's own two lines,
 * "incoming request" and "request completed", are turned off), written to an asynchronous,
 * buffered destination. What is logged and how to change it: docs/operations.md#logs.
 */

export interface AccessLogOptions {
  /** A request slower than this (ms) is logged in full at warn, whatever the sampling. */
  slowMs: number;
  /** Share (0..1) of successful public-API requests that get a line; errors and slow ones always do. */
  samplePublic: number;
}

/** Query parameters whose value is a secret (portal and dashboard sign-in links carry `token`). */
const SECRET_PARAMS = new Set(['token', 'code', 'key', 'licensekey', 'apikey', 'secret', 'password']);
const REDACTED = '[redacted]';

function secretName(raw: string): boolean {
  let name = raw.replace(/\+/g, ' ');
  try {
    name = decodeURIComponent(name);
  } catch {
    return true; // a name the server may still decode some other way: keep its value out
  }
  return SECRET_PARAMS.has(name.trim().toLowerCase());
}

/** A license key's shape (any letters or digits: imported keys keep other alphabets); the last group is kept. */
const KEY_SHAPED = /[A-Za-z0-9]{5}-[A-Za-z0-9]{5}-[A-Za-z0-9]{5}-[A-Za-z0-9]{5}-([A-Za-z0-9]{5})/g;
const MASKED_KEY = '*****-*****-*****-*****-$1';
/** Percent-encoded letters, digits and `-` (what a key can be spelled with): decoded to find a key however it was written. */
const ENCODED_KEY_CHAR = /%(?:2[dD]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA])/g;
const decodeKeyChar = (escape: string) => String.fromCharCode(Number.parseInt(escape.slice(1), 16));

/**
 * License keys in a URL (the dashboard's and the portal's paths, a search query, an unknown route)
 * masked but for their last group, which is enough to tell them apart in a log. A URL with neither
 * `-` nor `%` holds no key: the public API's paths, on the hot path, cost two scans of a short string.
 * A URL with a key is logged with its letters, digits and `-` decoded, so the masked form is the
 * only one left, whatever spelling the client used (`%2D`, lower case).
 */
function maskLicenseKeys(url: string): string {
  const encoded = url.indexOf('%') !== -1;
  if (!encoded && url.indexOf('-') === -1) return url;
  const plain = encoded ? url.replace(ENCODED_KEY_CHAR, decodeKeyChar) : url;
  KEY_SHAPED.lastIndex = 0;
  return KEY_SHAPED.test(plain) ? plain.replace(KEY_SHAPED, MASKED_KEY) : url;
}

/**
 * The URL as it may be logged: the value of every secret query parameter replaced, and license
 * keys masked (maskLicenseKeys). Names are matched decoded, as the server's query parser reads them
 * (`to%6Ben` is `token`).
 */
export function redactUrl(url: string): string {
  return maskLicenseKeys(redactQuery(url));
}

function redactQuery(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = url.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < params.length; i++) {
    const param = params[i]!;
    const eq = param.indexOf('=');
    if (secretName(eq === -1 ? param : param.slice(0, eq))) {
      params[i] = `${eq === -1 ? param : param.slice(0, eq)}=${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q + 1)}${params.join('&')}` : url;
}

/** Buffered lines are written at least this often, so a quiet server's lines still appear promptly. */
const LOG_FLUSH_MS = 1000;
/** Characters gathered before a write: a few dozen access lines per write(2) under load. */
const LOG_BUFFER_CHARS = 8 * 1024;
/** Past this much unwritten (stdout blocked), lines are dropped rather than memory grown. */
const LOG_BUFFER_MAX = 16 * 1024 * 1024;

/** Writes all of `text`, retrying while a non-blocking descriptor is full (as sonic-boom does). */
function writeAllSync(fd: number, text: string): void {
  let rest = Buffer.from(text);
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/** A log destination that is written asynchronously and can be written out at once before an exit. */
export interface BufferedLog extends pino.DestinationStream {
  /** Starts writing what is buffered now (asynchronously). */
  flush(): void;
  /** Writes everything buffered before returning: for exit paths. */
  flushSync(): void;
}

/** True when stdout is a regular file (`npm start > tessera.log`), not a pipe, socket or terminal. */
function stdoutIsFile(): boolean {
  try {
    return fstatSync(1).isFile();
  } catch {
    return false;
  }
}

/**
 * stdout from a buffer (`npm start`'s destination): lines gather here and are written 8 KiB at a
 * time, at least every second. To a pipe, socket or terminal (journald, Docker, a supervisor) the
 * chunks go through pino's asynchronous destination (sonic-boom), so a stalled reader never blocks
 * the event loop; sonic-boom alone would measure its whole pending buffer's UTF-8 length on every
 * line, so it gets whole chunks. To a regular file each chunk is written at once: an append to the
 * page cache costs about 5 µs (0.1 µs a line), while handing it to the thread pool cost about 2 µs a
 * line in thread switches on the server's core (docs/benchmarks.md#logs). main.ts calls
 * `flushSync()` on shutdown and on a fatal error; any other exit writes the buffer out too.
 */
export function bufferedStdout(): BufferedLog {
  const sink = stdoutIsFile() ? undefined : pino.destination({ dest: 1, sync: false, minLength: 0, maxLength: LOG_BUFFER_MAX });
  let lines: string[] = [];
  let chars = 0;
  const take = (): string => {
    const chunk = lines.join('');
    lines = [];
    chars = 0;
    return chunk;
  };
  const hand = (): void => {
    if (chars === 0) return;
    if (sink) sink.write(take());
    else writeAllSync(1, take());
  };
  const log: BufferedLog = {
    write(line: string) {
      lines.push(line);
      chars += line.length;
      if (chars >= LOG_BUFFER_CHARS) hand();
    },
    flush: hand,
    flushSync() {
      // What sonic-boom holds is older: out first. Ours directly, not through sink.write, which
      // would start an asynchronous write that an exit right after cuts off.
      sink?.flushSync();
      if (chars > 0) writeAllSync(1, take());
    },
  };
  setInterval(hand, LOG_FLUSH_MS).unref();
  process.once('exit', () => log.flushSync());
  return log;
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
type LogCall = (...args: unknown[]) => void;

/**
 * A request's logger (Fastify's `request.log`), whose pino child, carrying the request id, is made
 * the first time something logs through it. Most requests log nothing but their access line, which
 * the access log writes through the parent with the request id in it (the same line), so they make
 * no child: pino's child per request was a tenth of the logger's cost per request.
 */
export class RequestLogger {
  private made: pino.Logger | undefined;

  constructor(
    readonly parent: pino.Logger,
    private readonly bindings: pino.Bindings,
  ) {}

  private get own(): pino.Logger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  // The child has the parent's level until someone sets its own.
  get level(): string {
    return this.made ? this.made.level : this.parent.level;
  }

  set level(level: string) {
    this.own.level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.call('fatal', args);
  }
  error(...args: unknown[]): void {
    this.call('error', args);
  }
  warn(...args: unknown[]): void {
    this.call('warn', args);
  }
  info(...args: unknown[]): void {
    this.call('info', args);
  }
  debug(...args: unknown[]): void {
    this.call('debug', args);
  }
  trace(...args: unknown[]): void {
    this.call('trace', args);
  }
  silent(): void {}

  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger {
    return this.own.child(bindings, options);
  }

  private call(level: Level, args: unknown[]): void {
    // A disabled level makes no child (pino's method is a no-op either way).
    if (!this.isLevelEnabled(level)) return;
    (this.own[level] as LogCall)(...args);
  }
}

/**
 * Fastify's childLoggerFactory: a RequestLogger, or pino's own child when the route sets its own
 * log level or serializers (no route does today).
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): FastifyBaseLogger {
  for (const _ in options) return logger.child(bindings, options);
  return new RequestLogger(logger as pino.Logger, bindings) as unknown as FastifyBaseLogger;
}

/** pino's options for the app: secrets never reach a line, whatever is logged. */
export function loggerOptions(level: string, stream?: pino.DestinationStream): LoggerOptions & { stream?: pino.DestinationStream } {
  return {
    level,
    // Nothing logs requests whole today; should anything, these never reach a line.
    redact: ['req.headers.authorization', 'req.headers["license-key"]', 'req.headers.cookie', 'req.body'],
    serializers: {
      req: (req: FastifyRequest) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
    },
    ...(stream ? { stream } : {}),
  };
}

const PUBLIC_PREFIX = '/api/v1/public/';
const INFO = 30;
const { chindingsSym, endSym, lsCacheSym, messageKeySym, streamSym, timeSym } = pino.symbols;

export interface AccessLine {
  /** Set when the line goes through the parent logger (pino leaves undefined out). */
  reqId: string | undefined;
  method: string;
  url: string;
  route: string | undefined;
  status: number;
  ms: number;
  ip: string;
  code?: string;
  userAgent?: string;
  requestBytes?: string;
  slow?: true;
}

/**
 * A success's access line, written as `log.info(line, 'request')` writes it (the test compares
 * the two, byte for byte): pino's general path looks each key up in its serializers and redaction
 * rules, escapes every key and value one character at a time and joins some thirty pieces, which
 * were then flattened again on their way out; here the fields are one JSON.stringify (a flat string)
 * after pino's own prefix (level, time, pid and host). The app's logger has no mixin, log formatter
 * or hook that the general path would apply (loggerOptions).
 */
export function writeInfoLine(log: pino.Logger, line: AccessLine): void {
  // What pino keeps under the symbols it exports for integrations.
  const p = log as unknown as Record<symbol, unknown>;
  const fields = JSON.stringify(line); // pino leaves undefined values out too
  (p[streamSym] as pino.DestinationStream).write(
    `${(p[lsCacheSym] as Record<number, string>)[INFO]!}${(p[timeSym] as () => string)()}${p[chindingsSym] as string},${fields.slice(1, -1)},"${p[messageKeySym] as string}":"request"${p[endSym] as string}`,
  );
}

/**
 * Fastify's request-lifecycle logging, replaced: instead of "incoming request" and "request
 * completed" (two lines, the first before any work), one line once the answer is sent, through
 * the request's logger (so it carries `reqId`): method, redacted URL, route, status, duration in
 * ms, client address. Errors (4xx, 5xx) and slow requests are logged in full (the error code, the
 * user agent, the request size) and never sampled. It runs where Fastify logged "request
 * completed" (after the onResponse hooks): no hook of its own on the success path.
 */
export class AccessLog extends LogController {
  private readonly codes = new WeakMap<FastifyRequest, string>();
  private credit = 0;

  constructor(private readonly options: AccessLogOptions) {
    super();
  }

  /** Remembers each failed request's error code for its line (the error handler maps the same way). */
  watchErrors(app: FastifyInstance): void {
    app.addHook('onError', (request, _reply, error, done) => {
      this.codes.set(request, toAppError(error).code);
      done();
    });
  }

  /** At debug level only: the arrival of each request too (a request that never ends shows). */
  override incomingRequest(request: FastifyRequest): void {
    const log = request.log as unknown as pino.Logger;
    if (log.isLevelEnabled('debug')) log.debug({ method: request.method, url: redactUrl(request.url) }, 'request received');
  }

  // The access line says 404 with its URL.
  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const log = reply.log as unknown as pino.Logger | RequestLogger;
    const status = reply.statusCode;
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    const slow = ms >= this.options.slowMs;
    const failed = status >= 400 || error != null;
    if (!failed && !slow) {
      if (!log.isLevelEnabled('info')) return;
      if (this.options.samplePublic < 1 && request.url.startsWith(PUBLIC_PREFIX) && !this.sampled()) return;
    }
    // Through the parent with the request id first: the same line as the request's child writes, without making one.
    const lazy = log instanceof RequestLogger;
    const out = lazy ? log.parent : log;
    const route = request.routeOptions.url;
    const line: AccessLine = {
      reqId: lazy ? request.id : undefined,
      method: request.method,
      // A URL that is its route's own pattern (the public API's, on the hot path) holds no secret: no scan.
      url: request.url === route ? route : redactUrl(request.url),
      route,
      status,
      ms,
      ip: request.ip,
    };
    if (!failed && !slow) return writeInfoLine(out, line);
    this.addDetail(line, request, slow);
    if (status >= 500 || error != null) out.error(error ? { ...line, err: error } : line, 'request');
    else out.warn(line, 'request');
  }

  private addDetail(line: AccessLine, request: FastifyRequest, slow: boolean): void {
    const code = this.codes.get(request);
    if (code !== undefined) line.code = code;
    const agent = request.headers['user-agent'];
    if (agent !== undefined) line.userAgent = agent;
    const length = request.headers['content-length'];
    if (length !== undefined) line.requestBytes = length;
    if (slow) line.slow = true;
  }

  /** Every 1/samplePublic-th line, evenly (no randomness to account for). */
  private sampled(): boolean {
    this.credit += this.options.samplePublic;
    if (this.credit < 1) return false;
    this.credit -= 1;
    return true;
  }
}

import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type Issue } from '../core/errors.ts';

interface AjvIssue {
  instancePath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}

/** `/device/identifier` → `device.identifier`; a missing property names the property itself. */
function toIssue(part: string, e: AjvIssue): Issue {
  const segments = e.instancePath.split('/').filter(Boolean);
  if (e.keyword === 'required' && typeof e.params.missingProperty === 'string') segments.push(e.params.missingProperty);
  if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') segments.push(e.params.additionalProperty);
  const prefix = part === 'body' ? [] : [part === 'querystring' ? 'query' : part];
  return { path: [...prefix, ...segments].join('.') || part, message: e.message ?? 'is invalid' };
}

/** Turns framework errors into the service's error model; nothing internal reaches a response. */
export function toAppError(error: FastifyError & { validation?: AjvIssue[]; validationContext?: string }): AppError {
  if (error instanceof AppError) return error;
  if (error.validation) {
    const part = error.validationContext ?? 'body';
    return new AppError('invalid_request', 'The request is invalid.', error.validation.map((e) => toIssue(part, e)));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return error.statusCode === 415
        ? new AppError('unsupported_media_type', 'Send the body as application/json.')
        : new AppError('invalid_request', 'The request body is malformed.');
  }
  if (error.statusCode === 429) return new AppError('rate_limited', 'Too many requests; retry later.');
  // A plugin's own size limits (an upload's file, its parts).
  if (error.statusCode === 413) return new AppError('payload_too_large', 'The request body is too large.');
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new AppError('invalid_request', 'The request body is not valid JSON.');
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new AppError('invalid_request', 'The request is invalid.');
  }
  return new AppError('internal_error', 'Internal server error.');
}

/** The one JSON error body. */
export function errorBody(appError: AppError): { error: { code: string; message: string; issues?: Issue[] } } {
  const body: { code: string; message: string; issues?: Issue[] } = { code: appError.code, message: appError.message };
  if (appError.issues) body.issues = appError.issues;
  if (appError.details) Object.assign(body, appError.details);
  return { error: body };
}

function sendError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const appError = toAppError(error);
  if (appError.code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
  void reply.status(appError.statusCode).type('application/json; charset=utf-8').send(errorBody(appError));
}

/**
 * Errors the router raises before any route or hook runs (a URL that does not decode, `/api/v1/%`;
 * a parameter over the length limit): Fastify's `frameworkErrors` option. The answer never echoes the URL.
 */
export const frameworkErrors = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => sendError(error, request, reply);

/**
 * Errors of Node's HTTP parser, before Fastify sees a request (headers over the size limit, a
 * request timed out, malformed HTTP): Fastify's `clientErrorHandler` option. The socket gets the
 * service's JSON body and is closed.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const appError =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('headers_too_large', 'The request headers are too large.')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout', 'The request took too long to arrive.')
        : new AppError('invalid_request', 'The request is not valid HTTP.');
  this.log.debug({ code: err.code }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(errorBody(appError));
    socket.write(
      `HTTP/1.1 ${appError.statusCode} ${STATUS_CODES[appError.statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Whether a request comes from a browser's address bar or link: it asks for HTML and is not
 * for the API (whose clients always get JSON, whatever they accept).
 */
export const wantsPage = (request: FastifyRequest): boolean =>
  !request.url.startsWith('/api/') && (request.method === 'GET' || request.method === 'HEAD') && /\btext\/html\b/.test(request.headers.accept ?? '');

/** `notFoundPage` answers an unknown page to a browser (HTML); everyone else gets the JSON error. */
export function registerErrorHandling(app: FastifyInstance, notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply): void {
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((request, reply) => {
    if (notFoundPage && wantsPage(request)) return notFoundPage(request, reply);
    return reply.status(404).send({ error: { code: 'not_found', message: 'Not found.' } });
  });
}

/** While shutting down, in-flight requests finish; new ones get a 503 and their connection is closed. */
export function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    void reply.header('connection', 'close');
    done(new AppError('service_unavailable', 'The server is shutting down; retry shortly.'));
  });
}

import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ForbiddenAddressError, guardedLookup, hostOf, isForbiddenAddress } from './address-guard.ts';
import { type AnswerRecord, BodyPrefix, boundHeaders, type Headers } from './exchange.ts';

export interface SenderSettings {
  /** WEBHOOK_ALLOW_PRIVATE: skip the address guard (receivers on the operator's own network). */
  allowPrivate: boolean;
  /** Until the TCP (and TLS) connection is up. */
  connectTimeoutMs: number;
  /** Until the whole answer has arrived. */
  timeoutMs: number;
  /** Open connections per receiver host (keep-alive, reused across deliveries). */
  maxSockets: number;
}

export interface SendResult {
  /** Null when no answer came: refused, timed out, closed, or a forbidden address. */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** Every header sent (the defaults below and the caller's). */
  requestHeaders: Headers;
  /** The answer's headers and first 4 KiB of body; null when no answer came. */
  answer: AnswerRecord | null;
}

/** An answer's body is read (so the connection can be reused) but never kept beyond this. */
const MAX_ANSWER_BYTES = 64 * 1024;
const USER_AGENT = 'Tessera-Webhooks/1.0';

/**
 * Sends webhook POSTs: keep-alive agents (one connection per delivery would cap throughput at
 * the handshake rate), connect and answer timeouts, redirects never followed (a 3xx is a failed
 * attempt), and every connection made through the address guard unless private addresses are
 * allowed.
 */
export class WebhookSender {
  private readonly agents: { 'http:': http.Agent; 'https:': https.Agent };

  constructor(readonly settings: SenderSettings) {
    const common = { keepAlive: true, maxSockets: settings.maxSockets, ...(settings.allowPrivate ? {} : { lookup: guardedLookup }) };
    this.agents = { 'http:': new http.Agent(common), 'https:': new https.Agent(common) };
  }

  post(rawUrl: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const sent: Headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': USER_AGENT, ...headers };
    const result = (statusCode: number | null, error: string | null, answer: AnswerRecord | null = null): SendResult => ({
      statusCode,
      durationMs: Math.round(performance.now() - started),
      error,
      requestHeaders: sent,
      answer,
    });
    const url = new URL(rawUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve(result(null, `unsupported protocol ${url.protocol}`));
    // The lookup guard never sees an IP literal: check it here.
    const host = hostOf(url);
    if (!this.settings.allowPrivate && isIP(host) && isForbiddenAddress(host)) return Promise.resolve(result(null, new ForbiddenAddressError(host, host).message));

    return new Promise((resolve) => {
      let settled = false;
      const finish = (statusCode: number | null, error: string | null, answer: AnswerRecord | null = null) => {
        if (settled) return;
        settled = true;
        clearTimeout(answerTimer);
        resolve(result(statusCode, error, answer));
      };
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        agent: this.agents[url.protocol as 'http:' | 'https:'],
        headers: sent,
      });
      const answerTimer = setTimeout(() => request.destroy(new Error(`no answer within ${this.settings.timeoutMs} ms`)), this.settings.timeoutMs);
      request.on('socket', (socket) => {
        if (!socket.connecting) return; // a kept-alive connection
        const connectTimer = setTimeout(() => request.destroy(new Error(`could not connect within ${this.settings.connectTimeoutMs} ms`)), this.settings.connectTimeoutMs);
        socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
        socket.once('close', () => clearTimeout(connectTimer));
      });
      request.on('response', (response) => {
        let received = 0;
        const prefix = new BodyPrefix();
        const answer = (): AnswerRecord => ({ headers: boundHeaders(response.headers), body: prefix.text(), truncated: prefix.truncated });
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          prefix.add(chunk);
          if (received > MAX_ANSWER_BYTES) {
            finish(response.statusCode ?? null, null, answer());
            response.destroy();
          }
        });
        response.on('end', () => finish(response.statusCode ?? null, null, answer()));
        response.on('error', (err) => finish(null, `answer cut off: ${err.message}`));
        response.on('aborted', () => finish(null, 'answer cut off'));
      });
      request.on('error', (err) => finish(null, err.message));
      request.end(body);
    });
  }

  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}

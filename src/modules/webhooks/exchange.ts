import type { IncomingHttpHeaders } from 'node:http';

/**
 * What an attempt keeps of its request and answer (shown in the dashboard and the deliveries API),
 * bounded so that a chatty receiver cannot grow the store: the answer's first 4 KiB, at most
 * HEADERS_MAX headers, each value cut to HEADER_VALUE_MAX characters.
 */
export const RESPONSE_BODY_MAX = 4096;
const HEADERS_MAX = 50;
const HEADER_VALUE_MAX = 512;

export type Headers = Record<string, string>;

export interface AnswerRecord {
  headers: Headers;
  /** The first RESPONSE_BODY_MAX bytes, as UTF-8. */
  body: string;
  /** Whether the answer's body was longer than `body`. */
  truncated: boolean;
}

/** Headers as one string each (repeated ones joined), in a bounded number and length. */
export function boundHeaders(headers: IncomingHttpHeaders | Headers): Headers {
  const out: Headers = {};
  for (const [name, value] of Object.entries(headers).slice(0, HEADERS_MAX)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    out[name.toLowerCase()] = text.length > HEADER_VALUE_MAX ? `${text.slice(0, HEADER_VALUE_MAX)}…` : text;
  }
  return out;
}

/** Keeps the first RESPONSE_BODY_MAX bytes of an answer's chunks, counting the rest. */
export class BodyPrefix {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  add(chunk: Buffer): void {
    const room = RESPONSE_BODY_MAX - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

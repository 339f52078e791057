import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

export interface ReceivedWebhook {
  headers: IncomingMessage['headers'];
  body: string;
  json: { id: string; type: string; createdAt: string; data: any };
}

/** How the receiver answers one request: a status, or a fault. */
export type Behaviour = number | 'hang' | 'close' | { delayMs?: number; status: number; body?: string; headers?: Record<string, string> };

/**
 * A loopback webhook receiver for tests: records every request (raw body and headers) and
 * answers each with the next queued behaviour, else `fallback` (200).
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private readonly queue: Behaviour[] = [];
  fallback: Behaviour = 200;
  private readonly hung = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(path = '/hook'): Promise<WebhookReceiver> {
    let receiver!: WebhookReceiver;
    const server = createServer((req, res) => receiver.onRequest(req, res));
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
    return receiver;
  }

  /** The next requests get these behaviours, in order. */
  answer(...behaviours: Behaviour[]): void {
    this.queue.push(...behaviours);
  }

  of(type: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.json.type === type);
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const behaviour = this.queue.shift() ?? this.fallback;
      // Recorded whatever the answer: a receiver that failed still got the request.
      this.received.push({ headers: req.headers, body, json: JSON.parse(body) });
      if (behaviour === 'hang') {
        this.hung.add(res);
        return;
      }
      if (behaviour === 'close') {
        req.socket.destroy();
        return;
      }
      const { delayMs = 0, status, body: answer = String(status), headers = {} } = typeof behaviour === 'number' ? { status: behaviour } : behaviour;
      setTimeout(() => res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(answer), delayMs);
    });
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.socket?.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A receiver for the enclosing suite: started before its tests (answering `fallback` when given), closed after them. */
export function useWebhookReceiver(fallback?: Behaviour): { readonly receiver: WebhookReceiver } {
  const suite = {} as { receiver: WebhookReceiver };
  beforeAll(async () => {
    suite.receiver = await WebhookReceiver.start();
    if (fallback !== undefined) suite.receiver.fallback = fallback;
  });
  afterAll(() => suite.receiver?.close());
  return suite;
}

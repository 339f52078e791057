import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A real SMTP server on loopback that parses what it receives (MIME, encodings) like a mail client. */
export class TestSmtpServer {
  readonly inbox: ParsedMail[] = [];
  private readonly server: SMTPServer;
  port = 0;

  /** `delayMs` slows every accepted message down, like a busy relay. */
  constructor(delayMs = 0) {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData: (stream, _session, callback) => {
        simpleParser(stream)
          .then(async (mail) => {
            if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
            this.inbox.push(mail);
            callback();
          })
          .catch(callback);
      },
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.server.address() as AddressInfo).port;
    return `smtp://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Waits for a message to `to` whose subject matches. */
  async waitFor(to: string, subject: RegExp, timeoutMs = 15_000): Promise<ParsedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.inbox.find((m) => addresses(m).includes(to.toLowerCase()) && subject.test(m.subject ?? ''));
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no e-mail to ${to} matching ${subject} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function addresses(mail: ParsedMail): string[] {
  const to = Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : [];
  return to.flatMap((group) => group.value.map((a) => (a.address ?? '').toLowerCase()));
}

import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { DurableFiles } from './durable-files.ts';
import type { MailTransport, QueuedMail } from './types.ts';

export interface TransportSettings {
  smtpUrl?: string;
  mailFrom: string;
  dataDir: string;
  /** Files only: each message's links go to the log too (development). */
  logLinks?: boolean;
}

interface Log {
  info(obj: object, msg: string): void;
}

/** The links of a message's text part, as a reader would click them. */
export const linksOf = (text: string): string[] => [...new Set(text.match(/https?:\/\/[^\s<>"']+/g) ?? [])];

/**
 * The message as a person reads it, beside its .eml: headers and the text part decoded (the .eml's
 * quoted-printable breaks long links and turns = into =3D, so they cannot be copied from it).
 */
export function readableCopy(mail: QueuedMail, from: string): string {
  const headers = [`From: ${from}`, `To: ${mail.to}`, ...(mail.replyTo ? [`Reply-To: ${mail.replyTo}`] : []), `Subject: ${mail.subject}`, `Date: ${new Date(mail.createdAt).toISOString()}`];
  return `${headers.join('\n')}\n\n${mail.text}\n`;
}

const fromLine = (mailFrom: string, name: string | null | undefined): string => {
  const from = senderOf(mailFrom, name);
  return typeof from === 'string' ? from : `${JSON.stringify(from.name)} <${from.address}>`;
};

/** The domain of MAIL_FROM names our Message-IDs (`Tessera <no-reply@example.com>` → example.com). */
function senderDomain(mailFrom: string): string {
  return /@([^>\s]+)>?\s*$/.exec(mailFrom)?.[1] ?? 'localhost';
}

/**
 * MAIL_FROM, or its address under a vendor's display name: nodemailer quotes and encodes the name,
 * so a name is never read as more addresses or headers (it is one line already: branding/service.ts).
 */
export function senderOf(mailFrom: string, name: string | null | undefined): string | { name: string; address: string } {
  if (!name) return mailFrom;
  return { name, address: /<([^>]+)>\s*$/.exec(mailFrom)?.[1] ?? mailFrom.trim() };
}

/**
 * Messages sent at once, on either transport: the SMTP pool's connections, or .eml files in the
 * making. Building a message is about 0.3 ms of the event loop, and a file's open, fsync and
 * rename run on libuv's four pool threads, which the SQLite store's commit syncs share: a backlog
 * of e-mails sent all at once made every request wait behind it (docs/benchmarks.md, "Stripe
 * purchases at 300/s and the e-mails they send").
 */
export const SENDS_AT_ONCE = 2;

// Bounded waits: a hung SMTP server must not hold a claim past its lease.
const SMTP_TIMEOUTS = { connectionTimeout: 30_000, greetingTimeout: 30_000, socketTimeout: 60_000 };

/**
 * SMTP through nodemailer when SMTP_URL is set; otherwise every message becomes an .eml file in
 * DATA_DIR/outbox, with a readable .txt copy beside it (written under a temporary name, then renamed, so a reader never sees half a
 * file; on disk before the job counts as sent). The Message-ID is derived from the outbox id, so a
 * retried message carries the same one and receivers can drop a duplicate.
 */
export function createMailTransport(settings: TransportSettings, log: Log): MailTransport {
  const domain = senderDomain(settings.mailFrom);
  const envelope = (mail: QueuedMail) => ({
    from: senderOf(settings.mailFrom, mail.fromName),
    to: mail.to,
    replyTo: mail.replyTo ?? undefined,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: `<${mail.id}@${domain}>`,
    date: new Date(mail.createdAt),
  });

  if (settings.smtpUrl) {
    const smtp = nodemailer.createTransport({ url: settings.smtpUrl, pool: true, maxConnections: SENDS_AT_ONCE, ...SMTP_TIMEOUTS });
    const server = new URL(settings.smtpUrl);
    return {
      description: `smtp ${server.hostname}:${server.port || 'default'}`,
      async send(mail) {
        await smtp.sendMail(envelope(mail));
      },
      close: () => smtp.close(),
    };
  }

  const files = new DurableFiles(join(settings.dataDir, 'outbox'));
  const mime = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    description: `files in ${files.dir}`,
    async send(mail) {
      const info = await mime.sendMail(envelope(mail));
      const base = `${new Date(mail.createdAt).toISOString().replace(/[:.]/g, '-')}-${mail.id}`;
      const name = `${base}.eml`;
      await Promise.all([files.write(name, info.message as Buffer), files.write(`${base}.txt`, Buffer.from(readableCopy(mail, fromLine(settings.mailFrom, mail.fromName))))]);
      const links = settings.logLinks ? { links: linksOf(mail.text) } : {};
      log.info({ to: mail.to, kind: mail.kind, file: name, ...links }, 'e-mail written to the outbox directory (SMTP_URL is not set)');
    },
    close: () => mime.close(),
  };
}

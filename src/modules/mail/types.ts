/** A rendered message: what the outbox stores and a transport sends. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface OutgoingMail extends RenderedMail {
  /** What caused it (`purchase`, `portal_link`): for logs and operators, never for routing. */
  kind: string;
  to: string;
  /** Where replies go (the product's support address on a purchase e-mail); null: MAIL_FROM. */
  replyTo: string | null;
  /** The sender's display name (a vendor's brand); absent or null: MAIL_FROM as it is. */
  fromName?: string | null;
}

export interface QueuedMail extends OutgoingMail {
  id: string;
  /** Attempts so far, this one included. */
  attempts: number;
  createdAt: number;
}

/** Delivers one message; throws when the server refused it or could not be reached. */
export interface MailTransport {
  readonly description: string;
  send(mail: QueuedMail): Promise<void>;
  close(): void;
}

import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBoxOptions {
  /**
   * Keep up to this many opened values in memory (default none), for secrets used on a hot path
   * (a webhook delivery signs with its endpoint's secret, a payment notification is checked with
   * its connection's): opening costs a key schedule and a GCM pass, several µs each time. Keyed
   * by the sealed value and its context, so a replaced secret is a new entry, never a stale one.
   */
  remember?: number;
}

/**
 * Authenticated encryption for secrets at rest (AES-256-GCM). Each purpose gets its own key,
 * derived from the server's root secret with HKDF-SHA256 and a purpose label, so a ciphertext
 * made for one purpose never opens under another. `context` (e.g. the owning row's id) is bound
 * as additional data: a ciphertext copied onto another row does not open there.
 *
 * Format: `v1.<base64url(iv | ciphertext | tag)>`; the version prefix leaves room for a new
 * algorithm or a rotated root secret without guessing what an old value is.
 */
export class SecretBox {
  private readonly key: Buffer;
  private readonly remember: number;
  /** Opened values by context and sealed value, least recently used first. */
  private readonly opened = new Map<string, string>();

  constructor(rootSecret: Buffer, purpose: string, options: SecretBoxOptions = {}) {
    if (rootSecret.length < 32) throw new Error('SecretBox needs a root secret of at least 32 bytes');
    this.key = Buffer.from(hkdfSync('sha256', rootSecret, Buffer.alloc(0), `tessera/secret-box/${purpose}`, 32));
    this.remember = options.remember ?? 0;
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** Throws when the value was not sealed by this box for this context, or was altered. */
  open(sealed: string, context: string): string {
    if (this.remember === 0) return this.decrypt(sealed, context);
    const id = `${context}\u0000${sealed}`;
    let value = this.opened.get(id);
    if (value === undefined) {
      value = this.decrypt(sealed, context);
      if (this.opened.size >= this.remember) this.opened.delete(this.opened.keys().next().value!);
    } else {
      this.opened.delete(id); // moved to the end: most recently used
    }
    this.opened.set(id, value);
    return value;
  }

  private decrypt(sealed: string, context: string): string {
    const dot = sealed.indexOf('.');
    if (dot < 0 || sealed.slice(0, dot) !== VERSION) throw new Error('Unknown secret format');
    const raw = Buffer.from(sealed.slice(dot + 1), 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('Secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

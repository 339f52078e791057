/**
 * Where the client keeps its license token between runs. Implement it over whatever the
 * platform offers: a file (Node, Electron main), localStorage or IndexedDB (browsers), the OS
 * keychain. The token is signed, so storage needs no secrecy for integrity; it does hold the
 * license key and e-mail, so keep it out of places other users can read.
 */
export interface TokenStorage {
  get(): Promise<string | null>;
  set(token: string): Promise<void>;
  clear(): Promise<void>;
}

/** Keeps the token for the life of the process (tests, or apps that always start online). */
export class MemoryTokenStorage implements TokenStorage {
  private token: string | null = null;

  async get(): Promise<string | null> {
    return this.token;
  }

  async set(token: string): Promise<void> {
    this.token = token;
  }

  async clear(): Promise<void> {
    this.token = null;
  }
}

/** What the SDK uses of a Web Storage object (written out: the declarations need no DOM typings). */
export interface WebStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Browser storage (localStorage, sessionStorage) under one key. */
export class WebStorageTokenStorage implements TokenStorage {
  constructor(
    private readonly storage: WebStorage,
    private readonly key = 'tessera.licenseToken',
  ) {}

  async get(): Promise<string | null> {
    return this.storage.getItem(this.key);
  }

  async set(token: string): Promise<void> {
    this.storage.setItem(this.key, token);
  }

  async clear(): Promise<void> {
    this.storage.removeItem(this.key);
  }
}

// The agent's bearer token, read from its service account's token file. The kubelet rotates
// projected tokens (the file is replaced, typically hourly, and the old token soon stops working),
// so the file is read again at most once a minute, and at once when the API answers 401.
import { readFile } from 'node:fs/promises';
import { errorText } from '../infra/error-text.ts';

export interface BearerTokenDeps {
  readonly read?: (path: string) => Promise<string>;
  readonly now?: () => number;
  /** How long a token read from the file is used before the file is read again. */
  readonly maxAgeMs?: number;
}

export class BearerTokenFile {
  readonly #path: string;
  readonly #read: (path: string) => Promise<string>;
  readonly #now: () => number;
  readonly #maxAgeMs: number;
  #token: string | undefined;
  #readAt = 0;
  /** One read in flight at a time: concurrent requests share it. */
  #reading: Promise<string> | undefined;

  constructor(path: string, deps: BearerTokenDeps = {}) {
    this.#path = path;
    this.#read = deps.read ?? ((p) => readFile(p, 'utf8'));
    this.#now = deps.now ?? Date.now;
    this.#maxAgeMs = deps.maxAgeMs ?? 60_000;
  }

  /** The token to send now. */
  async current(): Promise<string> {
    if (this.#token !== undefined && this.#now() - this.#readAt < this.#maxAgeMs) return this.#token;
    this.#reading ??= this.#load().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  /** The API refused `token` (401): the next request reads the file again. */
  refused(token: string): void {
    if (token === this.#token) this.#token = undefined;
  }

  async #load(): Promise<string> {
    let text: string;
    try {
      text = await this.#read(this.#path);
    } catch (err) {
      const why = errorText(err);
      throw new Error(`cannot read the Kubernetes API token from ${this.#path}: ${why}`, { cause: err });
    }
    const token = text.trim();
    if (token === '') throw new Error(`the Kubernetes API token file ${this.#path} is empty`);
    this.#token = token;
    this.#readAt = this.#now();
    return token;
  }
}

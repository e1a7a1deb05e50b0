// Where ledger snapshots live. The file store writes atomically (temp file in the same
// directory, fsync, rename, fsync the directory) so that a crash at any point leaves either the
// old or the new snapshot on disk, never a torn one: durable before success.

import { randomBytes } from 'node:crypto';
import * as nodePath from 'node:path';
import { type LedgerFsDeps, nodeLedgerFs } from './node-fs.ts';

export type { LedgerFsDeps } from './node-fs.ts';

import { LedgerFormatError, type LedgerSnapshot, parseLedgerSnapshot } from './snapshot.ts';

export interface LedgerStore {
  /** The last saved snapshot, or undefined on a fresh start (nothing saved yet). */
  load(): Promise<LedgerSnapshot | undefined>;
  /** Resolves only once the snapshot is durable. */
  save(snapshot: LedgerSnapshot): Promise<void>;
  /**
   * Moves a stored snapshot that load() refused out of the way (kept for an operator, under a name
   * with the time `at`), so the agent can start; returns where it went.
   */
  setAside?(at: number): Promise<string>;
}

/** A fresh temp name suffix per save: nothing planted at a predictable name is ever written through. */
function randomTempSuffix(): string {
  return randomBytes(8).toString('hex');
}

/** How many taken temp names a save tries before it gives up (each is a fresh random name). */
const TEMP_ATTEMPTS = 4;

/** Thrown by load() for a file that exists but cannot be trusted; names the file and the bad field. */
export class LedgerLoadError extends Error {
  constructor(
    readonly path: string,
    readonly field: string | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LedgerLoadError';
  }
}

export class FileLedgerStore implements LedgerStore {
  readonly #path: string;
  readonly #fs: LedgerFsDeps;
  readonly #tempSuffix: () => string;

  constructor(path: string, fs: LedgerFsDeps = nodeLedgerFs, tempSuffix: () => string = randomTempSuffix) {
    this.#path = path;
    this.#fs = fs;
    this.#tempSuffix = tempSuffix;
  }

  get path(): string {
    return this.#path;
  }

  /** Temp files of saves that a crash interrupted: `<name>.tmp-*` beside the ledger. */
  async #removeLeftoverTemps(): Promise<void> {
    const dir = nodePath.dirname(this.#path);
    const prefix = `${nodePath.basename(this.#path)}.tmp`;
    for (const name of await this.#fs.listDir(dir)) {
      if (name.startsWith(prefix)) await this.#fs.removeFile(nodePath.join(dir, name));
    }
  }

  async load(): Promise<LedgerSnapshot | undefined> {
    await this.#removeLeftoverTemps();
    const text = await this.#fs.readFile(this.#path);
    if (text === undefined) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new LedgerLoadError(
        this.#path,
        undefined,
        `ledger ${this.#path} is not valid JSON: ${String(err)}`,
        {
          cause: err,
        },
      );
    }
    try {
      return parseLedgerSnapshot(json);
    } catch (err) {
      if (err instanceof LedgerFormatError) {
        throw new LedgerLoadError(
          this.#path,
          err.field,
          `ledger ${this.#path} is corrupt or from a newer agent; refusing to start from it: ${err.message}`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  async save(snapshot: LedgerSnapshot): Promise<void> {
    // The temp file must be in the same directory: rename is atomic only within one filesystem.
    // It is created exclusively under a fresh name, so a link or file planted there is refused,
    // never written through.
    const data = `${JSON.stringify(snapshot)}\n`;
    let tmp = '';
    try {
      tmp = await this.#createTemp(data);
      await this.#fs.syncFile(tmp);
      await this.#fs.rename(tmp, this.#path);
    } catch (err) {
      if (tmp !== '') await this.#fs.removeFile(tmp).catch(() => {});
      throw new Error(`cannot save ledger ${this.#path}: ${String(err)}`, { cause: err });
    }
    try {
      await this.#fs.syncDir(nodePath.dirname(this.#path));
    } catch (err) {
      throw new Error(`cannot save ledger ${this.#path}: fsync of its directory failed: ${String(err)}`, {
        cause: err,
      });
    }
  }

  async #createTemp(data: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const tmp = `${this.#path}.tmp-${this.#tempSuffix()}`;
      try {
        await this.#fs.writeFile(tmp, data);
        return tmp;
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        // Someone else's name (a file or a symlink): leave it alone and take another.
        if ((code !== 'EEXIST' && code !== 'ELOOP') || attempt >= TEMP_ATTEMPTS) throw err;
      }
    }
  }

  async setAside(at: number): Promise<string> {
    const stamp = new Date(at).toISOString().replaceAll(':', '-');
    const aside = `${this.#path}.corrupt-${stamp}`;
    await this.#fs.rename(this.#path, aside);
    await this.#fs.syncDir(nodePath.dirname(this.#path));
    return aside;
  }
}

// Where ledger snapshots live. The file store writes atomically (temp file in the same
// directory, fsync, rename, fsync the directory) so that a crash at any point leaves either the
// old or the new snapshot on disk, never a torn one: durable before success.

import * as nodePath from 'node:path';
import { type LedgerFsDeps, nodeLedgerFs } from './node-fs.ts';

export type { LedgerFsDeps } from './node-fs.ts';

import { LedgerFormatError, type LedgerSnapshot, parseLedgerSnapshot } from './snapshot.ts';

export interface LedgerStore {
  /** The last saved snapshot, or undefined on a fresh start (nothing saved yet). */
  load(): Promise<LedgerSnapshot | undefined>;
  /** Resolves only once the snapshot is durable. */
  save(snapshot: LedgerSnapshot): Promise<void>;
}

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

  constructor(path: string, fs: LedgerFsDeps = nodeLedgerFs) {
    this.#path = path;
    this.#fs = fs;
  }

  get path(): string {
    return this.#path;
  }

  async load(): Promise<LedgerSnapshot | undefined> {
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
    // Saves are serialized by the Ledger, so one fixed temp name is enough.
    const tmp = `${this.#path}.tmp`;
    try {
      await this.#fs.writeFile(tmp, `${JSON.stringify(snapshot)}\n`);
      await this.#fs.syncFile(tmp);
      await this.#fs.rename(tmp, this.#path);
    } catch (err) {
      await this.#fs.removeFile(tmp).catch(() => {});
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
}

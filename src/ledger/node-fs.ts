// The ledger's file operations, and their implementation on the real filesystem, built over an
// injectable slice of node:fs/promises so a test can watch the system calls (that every save really fsyncs).
import { constants } from 'node:fs';
import * as fsp from 'node:fs/promises';

/**
 * The file operations the file store needs, one system call's worth each, so that tests can model
 * which of them reached the disk when the machine stops (testing/memory-fs.ts).
 */
export interface LedgerFsDeps {
  /** File contents, or undefined when the file does not exist. */
  readFile(path: string): Promise<string | undefined>;
  /**
   * Creates `path` (mode 0600) and writes `data`; nothing is durable yet. Fails (code EEXIST or
   * ELOOP) when the name exists, a symlink included: a planted link is never followed.
   */
  writeFile(path: string, data: string): Promise<void>;
  /** fsyncs a file's contents (never through a symlink). */
  syncFile(path: string): Promise<void>;
  /**
   * Appends `data` to an existing file (never through a symlink, never creating one); nothing is
   * durable yet. A crash before syncData may keep any prefix of it.
   */
  appendFile(path: string, data: string): Promise<void>;
  /** fdatasyncs a file: its contents and size, not its times (never through a symlink). */
  syncData(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** fsyncs a directory so that a rename inside it is durable. */
  syncDir(dir: string): Promise<void>;
  /** Removes a name (a symlink itself, never its target); a missing name is not an error. */
  removeFile(path: string): Promise<void>;
  /** The names in a directory; a missing directory has none. */
  listDir(dir: string): Promise<string[]>;
}

/** The part of node:fs/promises the ledger uses. */
export interface FsPromises {
  open(path: string, flags: string | number, mode?: number): Promise<FileHandleLike>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
}

export interface FileHandleLike {
  writeFile(data: string, encoding: 'utf8'): Promise<void>;
  sync(): Promise<void>;
  datasync(): Promise<void>;
  close(): Promise<void>;
}

/** A new file only: O_EXCL fails on any existing name, and with O_CREAT it also refuses a symlink. */
const CREATE_EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW;
/** An existing file only (no O_CREAT), written at its end. */
const APPEND_NO_FOLLOW = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW;

function isMissing(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

async function withHandle(
  fs: FsPromises,
  path: string,
  flags: string | number,
  use: (h: FileHandleLike) => Promise<void>,
  mode?: number,
): Promise<void> {
  const handle = await fs.open(path, flags, mode);
  try {
    await use(handle);
  } finally {
    await handle.close();
  }
}

export function ledgerFsOn(fs: FsPromises): LedgerFsDeps {
  return {
    async readFile(path) {
      try {
        return await fs.readFile(path, 'utf8');
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    writeFile: (path, data) =>
      withHandle(fs, path, CREATE_EXCLUSIVE, (h) => h.writeFile(data, 'utf8'), 0o600),
    syncFile: (path) => withHandle(fs, path, READ_NO_FOLLOW, (h) => h.sync()),
    appendFile: (path, data) => withHandle(fs, path, APPEND_NO_FOLLOW, (h) => h.writeFile(data, 'utf8')),
    syncData: (path) => withHandle(fs, path, READ_NO_FOLLOW, (h) => h.datasync()),
    rename: (from, to) => fs.rename(from, to),
    syncDir: (dir) => withHandle(fs, dir, 'r', (h) => h.sync()),
    async removeFile(path) {
      try {
        await fs.unlink(path);
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    },
    async listDir(dir) {
      try {
        return await fs.readdir(dir);
      } catch (err) {
        if (isMissing(err)) return [];
        throw err;
      }
    },
  };
}

export const nodeLedgerFs: LedgerFsDeps = ledgerFsOn(fsp as unknown as FsPromises);

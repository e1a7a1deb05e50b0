// The ledger's file operations, and their implementation on the real filesystem, built over an
// injectable slice of node:fs/promises so a test can watch the system calls (that every save really fsyncs).
import { constants, fdatasyncSync, writeSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { SyncThread } from './sync-thread.ts';

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
   * Opens an existing file for appending (never through a symlink, never creating one). The handle
   * stays with the file it opened, also once another file is renamed over its name.
   */
  openAppend(path: string): Promise<AppendHandle>;
  rename(from: string, to: string): Promise<void>;
  /** fsyncs a directory so that a rename inside it is durable. */
  syncDir(dir: string): Promise<void>;
  /** Removes a name (a symlink itself, never its target); a missing name is not an error. */
  removeFile(path: string): Promise<void>;
  /** The names in a directory; a missing directory has none. */
  listDir(dir: string): Promise<string[]>;
  /**
   * Which boot of the machine this is (undefined: not known). Within one boot the page cache keeps
   * every byte written, so a journal read in the boot that wrote it can have lost nothing but the
   * line a dying process was writing (journal-format.ts).
   */
  bootId?(): Promise<string | undefined>;
}

/**
 * An open file that records are appended to: a commit costs one write and one fdatasync on it,
 * not an open and a close around each of them.
 */
export interface AppendHandle {
  /** Appends `data` at the file's end; nothing is durable yet. A crash before syncData may keep any prefix of it. */
  append(data: string): Promise<void>;
  /** fdatasyncs the file: its contents and size, not its times. */
  syncData(): Promise<void>;
  close(): Promise<void>;
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
  /**
   * Writes all of `data` where the handle writes (at the end, for the journal) on the calling
   * thread. A journal record is a few hundred bytes into the page cache, microseconds; through
   * libuv's thread pool the same write waits, in a burst of ADDs, behind the burst's other work.
   */
  appendSync(data: string): void;
  sync(): Promise<void>;
  /** fdatasync through libuv's thread pool. */
  datasync(): Promise<void>;
  /** fdatasync on the calling thread: the journal's, while the disk answers quickly (sync-thread.ts). */
  datasyncSync(): void;
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

/** The file operations on `fs`; the journal's fdatasyncs run on the thread `syncThread` chooses. */
export function ledgerFsOn(fs: FsPromises, syncThread = new SyncThread()): LedgerFsDeps {
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
    async openAppend(path) {
      const h = await fs.open(path, APPEND_NO_FOLLOW);
      return {
        append: async (data) => h.appendSync(data),
        syncData: () =>
          syncThread.run(
            () => h.datasyncSync(),
            () => h.datasync(),
          ),
        close: () => h.close(),
      };
    },
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
    async bootId() {
      const id = await fs.readFile(BOOT_ID, 'utf8').catch(() => '');
      return id.trim() === '' ? undefined : id.trim();
    },
  };
}

/** Linux's random id of the current boot. */
const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/** Writes every byte of `data` to `fd` (a regular file's write may in principle be short). */
function writeAllSync(fd: number, data: string): void {
  const bytes = Buffer.from(data, 'utf8');
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
}

/** node:fs/promises as FsPromises: its FileHandle, plus the synchronous append on its descriptor. */
const realFs: FsPromises = {
  async open(path, flags, mode) {
    const h = await fsp.open(path, flags, mode);
    return {
      writeFile: (data, encoding) => h.writeFile(data, encoding),
      appendSync: (data) => writeAllSync(h.fd, data),
      sync: () => h.sync(),
      datasync: () => h.datasync(),
      datasyncSync: () => fdatasyncSync(h.fd),
      close: () => h.close(),
    };
  },
  readFile: (path, encoding) => fsp.readFile(path, encoding),
  rename: (from, to) => fsp.rename(from, to),
  unlink: (path) => fsp.unlink(path),
  readdir: (path) => fsp.readdir(path),
};

export const nodeLedgerFs: LedgerFsDeps = ledgerFsOn(realFs);

/** The real file system with its own choice of thread for the journal's fdatasyncs. */
export function nodeLedgerFsWithSyncThread(syncThread: SyncThread): LedgerFsDeps {
  return ledgerFsOn(realFs, syncThread);
}
